--! prelude: job_prelude
-- ARGV[4] = attempt (fencing token), ARGV[5] = the agent's reason, ARGV[6] = epoch the wait ends.
-- The run asks a human for help (``request_human``): the job is paused and waiting_for_human (the
-- reason shown to operators, until when), the event says so, and a job with a webhook_url owes its
-- job.waiting_for_human webhook (delivery ``job.waiting_for_human:{id}:{n}``, n-th request).
-- Returns the delivery id ('' without a webhook), or 0 once the run no longer owns the job.
if redis.call('HGET', jkey, 'state') ~= 'running' or redis.call('HGET', jkey, 'attempts') ~= ARGV[4] then
  return 0
end
local n = redis.call('HINCRBY', jkey, 'human_requests', 1)
redis.call('HSET', jkey, 'paused', '1', 'paused_at', now, 'updated_at', now,
           'waiting_for_human', ARGV[5], 'human_until', ARGV[6])
add_event('waiting_for_human', {at = tonumber(now), reason = ARGV[5], ['until'] = tonumber(ARGV[6])})
local url = redis.call('HGET', jkey, 'webhook_url')
if not url or url == '' then return '' end
local delivery = 'job.waiting_for_human:' .. id .. ':' .. n
owe(delivery, url, 'job.waiting_for_human', 'human', id)
return delivery
