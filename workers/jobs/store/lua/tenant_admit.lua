-- A tenant's jobs admitted against its quotas (``tenants.quotas``), in one atomic step.
-- KEYS[1] = the tenant's usage hash, KEYS[2] = its counter for today (UTC), KEYS[3] = its open
-- reservations (zset: 'token|jobs' -> expiry), KEYS[4] = how many jobs of each open reservation are
-- recorded already (hash: token -> jobs; a job recorded with the token in its 'admission' field
-- adds 1 in its own ``set_state``, ``job_prelude.lua``, while the field is there);
-- ARGV[1] = jobs asked for, ARGV[2] = max queued (-1: none), ARGV[3] = max per day (-1: none),
-- ARGV[4] = the day counter's TTL, ARGV[5] = now, ARGV[6] = this admission's token,
-- ARGV[7] = seconds a reservation holds if its submitter never settles it (it died).
-- The queued check counts what is queued and what other admissions reserved and have not recorded
-- yet (a recorded job is in 'queued', so its reservation no longer counts it: never twice), and this
-- one's jobs are reserved in the same call: two submissions racing cannot both pass.
-- Returns {'ok', jobs today} or {quota, its value now}.
local n, max_queued, max_day = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now = tonumber(ARGV[5])
if max_queued >= 0 then
  for _, member in ipairs(redis.call('ZRANGEBYSCORE', KEYS[3], '-inf', now)) do  -- lapsed: its submitter died
    redis.call('HDEL', KEYS[4], string.match(member, '^([^|]*)'))
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  local reserved = 0
  for _, member in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    local token, jobs = string.match(member, '^([^|]*)|(%d+)$$')
    local recorded = tonumber(redis.call('HGET', KEYS[4], token or '') or '0')
    reserved = reserved + math.max(0, (tonumber(jobs) or 0) - recorded)
  end
  local queued = math.max(0, tonumber(redis.call('HGET', KEYS[1], 'queued') or '0'))
  if queued + reserved + n > max_queued then return {'queued', queued + reserved} end
end
local today = tonumber(redis.call('GET', KEYS[2]) or '0')
if max_day >= 0 and today + n > max_day then return {'jobs_per_day', today} end
today = redis.call('INCRBY', KEYS[2], n)
redis.call('EXPIRE', KEYS[2], ARGV[4])
if max_queued >= 0 then
  local hold = math.ceil(tonumber(ARGV[7])) + 1
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[7]), ARGV[6] .. '|' .. n)
  redis.call('HSET', KEYS[4], ARGV[6], 0)  -- only an open admission's field counts its recorded jobs
  redis.call('EXPIRE', KEYS[3], hold)
  redis.call('EXPIRE', KEYS[4], hold)
end
return {'ok', today}
