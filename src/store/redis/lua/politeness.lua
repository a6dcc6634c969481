-- The frontier's politeness rule, Redis's copy of src/store/politeness.ts: the rule runs inside
-- Redis, next to the queue state it reads. One table of cases (test/helpers/politeness-cases.ts)
-- drives both copies (test/politeness-rule.test.ts), so that the two cannot drift: a change here
-- is a change there. These are functions of numbers only (no key, no call of Redis or of another
-- file), so that the test can EVAL this file alone. The order of ready queues is not here: the
-- client sorts the ready queues of every partition (redis/queue-picks.ts, with politeness.ts).

-- How many more of a queue's entries may be out on lease (math.huge: no limit; never below 0):
-- the in-flight limit (0: none) less those leased, and the crawl limit (nil: none) less those
-- completed and leased. Leased entries count toward the crawl limit: once done, the queue must not
-- be over it.
local function queue_room(inflight, leased, completed, crawl_limit)
  local r = math.huge
  if inflight > 0 then r = inflight - leased end
  if crawl_limit then r = math.min(r, crawl_limit - completed - leased) end
  return math.max(0, r)
end

-- When take may next hand a queue out: the latest of its first due entry not leased, its last
-- take (nil: never) plus its delay (its own, else the default), and its block (nil: none). nil
-- when nothing in it could be handed out: no entry waits (first_due nil) or it has no room.
local function queue_ready_at(first_due, last_take, delay, default_delay, blocked, room)
  if room == 0 or not first_due then return nil end
  local at = first_due
  if last_take then at = math.max(at, last_take + (delay or default_delay)) end
  return math.max(at, blocked or 0)
end
