-- A crawl's page the site refused (429 or 503) is visited again later in the run, as the same page
-- (``lifecycle.crawling.retry_page``), in one atomic step: a new job of the crawl's batch stands for
-- the refused one. The batch's ``total`` grows by one (before the refused job is recorded, so the
-- batch cannot complete meanwhile), the crawl's ``queued`` and budget do not (it is not a new page),
-- the refused job's page entry is marked ``retried_as`` (the crawl's results show the new job's
-- line; a redelivered attempt of the refused job sees it and does not visit the page again), and the
-- crawl counts ``retried`` and keeps the refused job's id in KEYS[5] (its failure, when recorded, is
-- not a failed page). Once per refused job: a second call (the refused job run again after a
-- worker was killed) finds ``retried_as`` and creates nothing. None past ``retries`` for the page,
-- nor in a cancelled or completed crawl.
-- KEYS[1] crawl hash, KEYS[2] pages hash, KEYS[3] batch hash, KEYS[4] batch jobs list, KEYS[5] refused set.
-- ARGV[1] the refused job's id, ARGV[2] retries allowed per page, ARGV[3] job_create's ARGV as JSON.
-- Returns {'queued', id} (publish it), {'already', id} (queued by an earlier attempt), or {'spent'},
-- {'closed'}, {'unknown'} (not a page of this crawl).
local function create_one(ARGV)
${CREATE_ONE}
end
local raw = redis.call('HGET', KEYS[2], ARGV[1])
if not raw then return {'unknown'} end
local page = cjson.decode(raw)
if page['retried_as'] then return {'already', page['retried_as']} end
local b = redis.call('HMGET', KEYS[3], 'cancel_requested', 'finished_at')
if b[1] == '1' or (b[2] and b[2] ~= '') then return {'closed'} end
local tries = tonumber(page['retries'] or 0)
if tries >= tonumber(ARGV[2]) then return {'spent'} end
local reply = create_one(cjson.decode(ARGV[3]))
redis.call('RPUSH', KEYS[4], reply[1])
redis.call('HINCRBY', KEYS[3], 'total', 1)
redis.call('HSET', KEYS[2], reply[1], cjson.encode({url = page['url'], depth = page['depth'], parent = page['parent'],
                                                     sitemaps = false, retries = tries + 1}))
page['retried_as'] = reply[1]
redis.call('HSET', KEYS[2], ARGV[1], cjson.encode(page))
redis.call('HINCRBY', KEYS[1], 'retried', 1)
redis.call('SADD', KEYS[5], ARGV[1])
return {'queued', reply[1]}
