-- A worker's heartbeat for one session (``sessions.store``): KEYS as in session_open.lua;
-- ARGV[1] = new expiry (epoch), ARGV[2] = TTL, ARGV[3] = the id, ARGV[4...] = field, value pairs
-- to set. Returns 0 (and sets nothing) when the record is gone (closed from elsewhere, or
-- expired): the worker then closes the session.
if redis.call('EXISTS', KEYS[2]) == 0 then
  redis.call('ZREM', KEYS[1], ARGV[3])
  return 0
end
if #ARGV > 3 then
  local fields = {}
  for i = 4, #ARGV do fields[#fields + 1] = ARGV[i] end
  redis.call('HSET', KEYS[2], unpack(fields))
end
redis.call('EXPIRE', KEYS[2], ARGV[2])
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[3])
return 1
