-- An auth profile written (``profiles.store``): last writer wins, and every write bumps the version.
-- KEYS[1] profiles hash; ARGV[1] name, ARGV[2] entry JSON (no version), ARGV[3] expected version or ''.
-- Returns the new version, or -1 when ARGV[3] is given and is not the current version.
local current = redis.call('HGET', KEYS[1], ARGV[1])
local version = 0
if current then version = cjson.decode(current)['version'] or 0 end
if ARGV[3] ~= '' and tonumber(ARGV[3]) ~= version then return -1 end
local entry = cjson.decode(ARGV[2])
entry['version'] = version + 1
redis.call('HSET', KEYS[1], ARGV[1], cjson.encode(entry))
return version + 1
