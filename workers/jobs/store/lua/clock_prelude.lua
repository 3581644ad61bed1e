-- What every politeness script starts with: ``now`` from the server's clock (``TIME``), not the
-- caller's: workers on several hosts share one time line, so a skewed host can neither overstay a
-- slot nor navigate early. Numbers go back as strings (a Lua number would be truncated to an
-- integer reply).
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
