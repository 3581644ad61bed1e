-- A cancelled crawl goes on (``crawls.store.CrawlStore.resume``), in one atomic step: its batch is
-- reopened (the cancel, the completion and the expiry it set are undone) and every URL of its
-- frontier (the queued pages whose jobs were cancelled before they ran, the links found after the
-- cancel) is queued again as a job of the batch, once: a URL leaves the frontier (``HDEL``) in the
-- step that queues it, so two resumes cannot queue it twice, and the second one finds the crawl
-- running. A page whose cancelled job was already counted in ``queued`` is not counted again: the
-- new job stands for it (the batch counts one job less cancelled, its total unchanged; the old
-- job's page entry is marked ``resumed_as``, so the crawl's results show the new one); a link found
-- after the cancel takes the budget and its pattern's cap (``crawl_admit.lua``) as any new page,
-- else it is counted ``skipped:budget`` or ``skipped:trap``.
-- KEYS[1] crawl hash, KEYS[2] pages hash, KEYS[3] batch hash, KEYS[4] batch jobs list,
-- KEYS[5] frontier hash, KEYS[6] seen set, KEYS[7] jobs:expiring zset, KEYS[8] patterns hash,
-- KEYS[9] traps hash.
-- ARGV[1] batch id; ARGV[2..] JSON {url, depth, parent, sitemaps, pattern, job, args}.
-- Returns JSON {state: 'ok' | 'not_cancelled' (the crawl was never cancelled, or is running again),
-- ids: [job ids created], budget, trap: the skips this call counted}.
local function create_one(ARGV)
${CREATE_ONE}
end
if redis.call('HGET', KEYS[3], 'cancel_requested') ~= '1' then return cjson.encode({state = 'not_cancelled'}) end
redis.call('HDEL', KEYS[3], 'cancel_requested', 'finished_at', 'counted')
for _, key in ipairs({KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[8], KEYS[9]}) do redis.call('PERSIST', key) end
redis.call('ZREM', KEYS[7], 'batch ' .. ARGV[1])
local h = redis.call('HMGET', KEYS[1], 'max_pages', 'queued', 'max_pages_per_pattern')
local max_pages, queued, cap = tonumber(h[1]) or 0, tonumber(h[2]) or 0, tonumber(h[3]) or 0
local ids, budget, trap = {}, 0, 0
for i = 2, #ARGV do
  local c = cjson.decode(ARGV[i])
  if redis.call('HDEL', KEYS[5], c['url']) == 1 then
    local was = c['job']
    if not was and cap > 0 and c['pattern'] and (tonumber(redis.call('HGET', KEYS[8], c['pattern'])) or 0) >= cap then
      trap = trap + 1
      redis.call('HINCRBY', KEYS[9], c['pattern'], 1)
    elseif not was and queued >= max_pages then
      budget = budget + 1
    else
      local reply = create_one(c['args'])
      redis.call('RPUSH', KEYS[4], reply[1])
      if was then  -- the new job stands for the cancelled one in the batch's counts
        redis.call('HINCRBY', KEYS[3], 'cancelled', -1)
      else
        redis.call('HINCRBY', KEYS[3], 'total', 1)
      end
      redis.call('HSET', KEYS[2], reply[1], cjson.encode({url = c['url'], depth = c['depth'], parent = c['parent'],
                                                           sitemaps = c['sitemaps']}))
      if was then
        local old = redis.call('HGET', KEYS[2], was)
        if old then
          local page = cjson.decode(old)
          page['resumed_as'] = reply[1]
          redis.call('HSET', KEYS[2], was, cjson.encode(page))
        end
      else
        queued = queued + 1
        if c['pattern'] then redis.call('HINCRBY', KEYS[8], c['pattern'], 1) end
      end
      redis.call('HINCRBY', KEYS[1], 'resumed', 1)
      ids[#ids + 1] = reply[1]
    end
  end
end
if budget > 0 then redis.call('HINCRBY', KEYS[1], 'skipped:budget', budget) end
if trap > 0 then redis.call('HINCRBY', KEYS[1], 'skipped:trap', trap) end
redis.call('HSET', KEYS[1], 'queued', queued)
return cjson.encode({state = 'ok', ids = ids, budget = budget, trap = trap})
