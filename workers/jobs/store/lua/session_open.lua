-- Interactive sessions (``sessions.store``). KEYS[1] = the ``sessions`` zset, KEYS[2] = the session's hash;
-- ARGV[1] = now, ARGV[2] = the cap, ARGV[3] = the record's first expiry (epoch seconds),
-- ARGV[4] = its TTL in seconds, ARGV[5] = its id, ARGV[6...] = field, value pairs. Returns 1, or 0
-- when the cap is reached (sessions whose record expired, i.e. whose worker died, do not count).
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[5])
local fields = {}
for i = 6, #ARGV do fields[#fields + 1] = ARGV[i] end
redis.call('HSET', KEYS[2], unpack(fields))
redis.call('EXPIRE', KEYS[2], ARGV[4])
return 1
