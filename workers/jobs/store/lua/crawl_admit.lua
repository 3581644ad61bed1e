-- A crawl's frontier grows by one call (``crawls.store``): each candidate URL (already normalised,
-- in scope and within max_depth) is queued at most once per crawl. ``SADD`` on the crawl's seen set
-- is the rule: a URL already in it is counted ``skipped:dedup``; a new one is queued as a job of the
-- crawl's batch (job_create.lua, passed in as CREATE_ONE, as ``batch_create_many`` does) while the
-- crawl has budget left (max_pages, its deadline, no cancel), else counted ``skipped:budget``. The
-- batch's ``total`` grows in the same call, before the job that found the URL finishes, so the batch
-- (and the crawl) cannot complete while a page it found is still to be visited.
-- The per-pattern cap (a crawler trap): a new URL whose pattern (``urls.pattern``) already had
-- ``max_pages_per_pattern`` pages queued (KEYS[7], pattern -> pages queued) is counted
-- ``skipped:trap`` and its pattern's skips in KEYS[8]; checked and counted here, in the same atomic
-- step as the queueing, so two workers admitting at once cannot pass the cap.
-- A URL found while the crawl is cancelled (a page that was running when the cancel came) is seen
-- and held in its frontier (KEYS[6]) for ``crawl_resume.lua``, not counted skipped.
-- KEYS[1] crawl hash, KEYS[2] seen set, KEYS[3] pages hash, KEYS[4] batch hash, KEYS[5] batch jobs list,
-- KEYS[6] frontier hash, KEYS[7] patterns hash, KEYS[8] traps hash.
-- ARGV[1] now; ARGV[2..] JSON {url, depth, parent, pattern, args}: args is job_create's ARGV, or absent
-- for a URL only marked seen (a page's canonical or final URL).
-- Returns JSON {ids: [job ids created], dedup, budget, trap, held}: what became of each candidate
-- (the skips are the ones this call added to the crawl's counters).
local function create_one(ARGV)
${CREATE_ONE}
end
local now = tonumber(ARGV[1])
local h = redis.call('HMGET', KEYS[1], 'max_pages', 'deadline', 'queued', 'max_pages_per_pattern')
local b = redis.call('HMGET', KEYS[4], 'cancel_requested', 'finished_at')
local max_pages, deadline, queued = tonumber(h[1]) or 0, tonumber(h[2]) or 0, tonumber(h[3]) or 0
local cap = tonumber(h[4]) or 0
local cancelled = b[1] == '1'
local closed = cancelled or (b[2] and b[2] ~= '') or (deadline > 0 and now > deadline)
local ids = {}
local did = {dedup = 0, budget = 0, trap = 0, held = 0}
local function trapped(c)
  return cap > 0 and c['pattern'] and (tonumber(redis.call('HGET', KEYS[7], c['pattern'])) or 0) >= cap
end
for i = 2, #ARGV do
  local c = cjson.decode(ARGV[i])
  if not c['args'] then
    redis.call('SADD', KEYS[2], c['url'])
  elseif redis.call('SADD', KEYS[2], c['url']) == 0 then
    did.dedup = did.dedup + 1
  elseif trapped(c) then  -- seen all the same: the pattern's pages never grow back
    did.trap = did.trap + 1
    redis.call('HINCRBY', KEYS[8], c['pattern'], 1)
  elseif cancelled and queued < max_pages then  -- kept to resume from
    did.held = did.held + 1
    redis.call('HSET', KEYS[6], c['url'], cjson.encode({url = c['url'], depth = c['depth'], parent = c['parent'],
                                                         sitemaps = c['sitemaps'], pattern = c['pattern']}))
  elseif closed or queued >= max_pages then  -- seen all the same: the budget never grows back
    did.budget = did.budget + 1
  else
    local reply = create_one(c['args'])
    redis.call('RPUSH', KEYS[5], reply[1])
    redis.call('HINCRBY', KEYS[4], 'total', 1)
    redis.call('HSET', KEYS[3], reply[1], cjson.encode({url = c['url'], depth = c['depth'], parent = c['parent'],
                                                         sitemaps = c['sitemaps']}))
    if c['pattern'] then redis.call('HINCRBY', KEYS[7], c['pattern'], 1) end
    queued = queued + 1
    ids[#ids + 1] = reply[1]
  end
end
for _, reason in ipairs({'dedup', 'budget', 'trap'}) do
  if did[reason] > 0 then redis.call('HINCRBY', KEYS[1], 'skipped:' .. reason, did[reason]) end
end
redis.call('HSET', KEYS[1], 'queued', queued)
return cjson.encode({ids = ids, dedup = did.dedup, budget = did.budget, trap = did.trap, held = did.held})
