-- A tenant's jobs admitted against its quotas (``tenants.quotas``), in one atomic step.
-- KEYS[1] = the tenant's usage hash, KEYS[2] = its counter for today (UTC), KEYS[3] = its open
-- reservations (zset: 'token|jobs' -> expiry);
-- ARGV[1] = jobs asked for, ARGV[2] = max queued (-1: none), ARGV[3] = max per day (-1: none),
-- ARGV[4] = the day counter's TTL, ARGV[5] = now, ARGV[6] = this admission's token,
-- ARGV[7] = seconds a reservation holds if its submitter never settles it (it died).
-- The queued check counts what is queued and what other admissions reserved and have not recorded
-- yet, and this one's jobs are reserved in the same call: two submissions racing cannot both pass.
-- Returns {'ok', jobs today} or {quota, its value now}.
local n, max_queued, max_day = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local now = tonumber(ARGV[5])
if max_queued >= 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', now)
  local reserved = 0
  for _, member in ipairs(redis.call('ZRANGE', KEYS[3], 0, -1)) do
    reserved = reserved + (tonumber(string.match(member, '|(%d+)$$')) or 0)
  end
  local queued = math.max(0, tonumber(redis.call('HGET', KEYS[1], 'queued') or '0'))
  if queued + reserved + n > max_queued then return {'queued', queued + reserved} end
end
local today = tonumber(redis.call('GET', KEYS[2]) or '0')
if max_day >= 0 and today + n > max_day then return {'jobs_per_day', today} end
today = redis.call('INCRBY', KEYS[2], n)
redis.call('EXPIRE', KEYS[2], ARGV[4])
if max_queued >= 0 then
  redis.call('ZADD', KEYS[3], now + tonumber(ARGV[7]), ARGV[6] .. '|' .. n)
  redis.call('EXPIRE', KEYS[3], math.ceil(tonumber(ARGV[7])) + 1)
end
return {'ok', today}
