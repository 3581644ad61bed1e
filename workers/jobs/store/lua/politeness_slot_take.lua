--! prelude: clock_prelude
-- KEYS[1] = the domain's slots zset; ARGV[1] = job id, ARGV[2] = limit (0: none), ARGV[3] = lease
-- seconds. Takes (or renews) the job's slot if fewer than ``limit`` live slots are held; 1 if it
-- holds one now, else 0. Lapsed slots (a dead worker's) are dropped first.
local lease = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local held = redis.call('ZSCORE', KEYS[1], ARGV[1])
local limit = tonumber(ARGV[2])
if not held and limit > 0 and redis.call('ZCARD', KEYS[1]) >= limit then return 0 end
redis.call('ZADD', KEYS[1], now + lease, ARGV[1])
redis.call('EXPIRE', KEYS[1], math.ceil(lease) + 1)
return 1
