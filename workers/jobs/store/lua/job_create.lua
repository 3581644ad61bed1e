--! prelude: job_prelude
-- ARGV[4] = flat field/value array (its JSON text in a call of its own; the array itself where a batch or a
-- crawl script decoded the job's arguments as one JSON value), ARGV[5] = idempotency key or '', ARGV[6] = ttl,
-- ARGV[7..] = label index keys. Returns {job id, 1 if created else 0}.
local idem, ttl = ARGV[5], ARGV[6]
if redis.call('EXISTS', jkey) == 1 then return {id, 1} end  -- a retry of a call whose reply was lost
if idem ~= '' then
  local ikey = prefix .. 'idem:' .. idem
  local existing = redis.call('GET', ikey)
  if existing and redis.call('EXISTS', prefix .. 'job:' .. existing) == 1 then
    return {existing, 0}
  end
  redis.call('SET', ikey, id, 'EX', ttl)
end
local seq = redis.call('INCR', prefix .. 'jobs:seq')
local fields = ARGV[4]
if type(fields) == 'string' then fields = cjson.decode(fields) end
redis.call('HSET', jkey, 'id', id, 'seq', seq, 'created_at', now, 'attempts', 0, unpack(fields))
redis.call('ZADD', prefix .. 'jobs:all', seq, id)
for i = 7, #ARGV do redis.call('ZADD', ARGV[i], seq, id) end
set_state(nil, 'queued', {})
return {id, 1}
