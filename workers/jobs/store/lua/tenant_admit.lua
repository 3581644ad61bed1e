-- A tenant's jobs admitted against its quotas (``tenants.quotas``), in one atomic step.
-- KEYS[1] = the tenant's usage hash, KEYS[2] = its counter for today (UTC);
-- ARGV[1] = jobs asked for, ARGV[2] = max queued (-1: none), ARGV[3] = max per day (-1: none),
-- ARGV[4] = the day counter's TTL. Returns {'ok', jobs today} or {quota, its value now}.
local n, max_queued, max_day = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
if max_queued >= 0 then
  local queued = math.max(0, tonumber(redis.call('HGET', KEYS[1], 'queued') or '0'))
  if queued + n > max_queued then return {'queued', queued} end
end
local today = tonumber(redis.call('GET', KEYS[2]) or '0')
if max_day >= 0 and today + n > max_day then return {'jobs_per_day', today} end
today = redis.call('INCRBY', KEYS[2], n)
redis.call('EXPIRE', KEYS[2], ARGV[4])
return {'ok', today}
