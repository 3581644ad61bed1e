-- Many jobs of one batch created in one call (``batches.store``): job_create.lua (with its prelude),
-- which ``batches.store`` passes in as CREATE_ONE, runs once per job: ``ARGV[i]`` is the JSON array
-- of job i's arguments, which becomes that run's ``ARGV``. Same code as ``JobStore.create`` (so a
-- batch job is recorded exactly like a single one), without a round trip per job. Each id joins the
-- batch's list (``KEYS[2]``) in the same call, and an item whose idempotency key named an existing
-- job leaves the batch's ``total`` (``KEYS[1]``): the batch is consistent after every call, even if
-- the process submitting it dies between two. Returns only the items that made no job: {i, id, ...}
-- (``i`` the item's place in ARGV, ``id`` the existing job its key named); every other item's job
-- has the id its arguments gave it, which the caller knows (issue 27: reading back two values a
-- job was a tenth of a 10,000-job batch's acceptance).
local function create_one(ARGV)
${CREATE_ONE}
end
local out = {}
for i = 1, #ARGV do
  local reply = create_one(cjson.decode(ARGV[i]))
  redis.call('RPUSH', KEYS[2], reply[1])
  if tonumber(reply[2]) == 0 then
    redis.call('HINCRBY', KEYS[1], 'total', -1)
    redis.call('HINCRBY', KEYS[1], 'duplicates', 1)
    out[#out + 1] = i
    out[#out + 1] = reply[1]
  end
end
return out
