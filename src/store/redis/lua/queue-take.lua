-- Taking from a partition of the frontier's queues (queue-state.lua): the client first reads the
-- ready queues of every partition (ss_fq_ready), picks queues across them (oldest ready first,
-- host affinity), then leases from the picked queues of each partition in one call (ss_fq_take),
-- which checks each queue's gate again: of racing takers, one gets a queue, the others find it
-- not ready (its delay began again).

-- How many of a ready queue's entries a take could lease now: those due, within its limits. A
-- FIFO whose head is due counts whole (its entries are due when queued).
local function available(F, q, now)
  local due = (q.f > 0 and q.fd <= now) and q.f or 0
  if q.s > 0 then due = due + set_due_count(F, q.qn, now) end
  return math.min(due, queue_room(F.inflight, q.k, q.c, q.l))
end

-- ARGV: settings, offset, limit, '=' and a queue key, or '' for every queue. Replies Redis's now,
-- then per ready queue (ready time <= now, in take order: oldest ready first, then taken longest
-- ago, then key; from offset, at most limit) its key, ready time, last take (-1: never) and how
-- many entries it could hand out (available); with a queue key, that queue alone when it is
-- ready. Gives ended leases back first (a write).
local function ss_fq_ready(keys, args)
  local F, now = fbegin(keys, args)
  local out = {now}
  local function add(key, q, at)
    out[#out + 1] = key
    out[#out + 1] = at
    out[#out + 1] = q.t or -1
    out[#out + 1] = available(F, q, now)
  end
  if args[6] ~= '' then
    local only = string.sub(args[6], 2)
    local q = queue_get(F, only)
    local at = q and ready_at(F, q)
    if at and at <= now then add(only, q, at) end
    return out
  end
  local ready = redis.call('ZRANGEBYSCORE', F.ready, '-inf', int(now), 'WITHSCORES', 'LIMIT', args[4], args[5])
  for i = 1, #ready, 2 do
    local key = string.sub(ready[i], 15)
    local q = queue_get(F, key)
    if q then add(key, q, tonumber(ready[i + 1])) end
  end
  return out
end

-- Most bytes of URLs and data one take replies (CALL_BYTES_MAX in call-parts.ts): a call holds
-- its master while it runs, and one that outlasts cluster-node-timeout gets its master failed
-- over. A take stops there, with at least one entry; the rest wait for the next take.
local TAKE_BYTES_MAX = 4194304

-- Leases up to n of the queue's due entries (due order, then place and number: the FIFO's head and
-- the set's merged) until until_ms, while the reply (out, out.bytes so far) is under
-- TAKE_BYTES_MAX; its delay begins.
local function take_queue(F, key, q, n, now, until_ms, owner, out)
  local fifo = fifo_reader(F, q)
  local set = {}
  if q.s > 0 then
    for i, member in ipairs(set_range(F, q.qn, n, now)) do set[i] = set_parse(member) end
  end
  local j = 1
  for _ = 1, n do
    if #out > 0 and out.bytes >= TAKE_BYTES_MAX then break end
    local id, r = fifo.peek()
    if r and r.t > now then id, r = nil, nil end
    local s = set[j]
    if s and (r == nil or before(s.t, s.n, s.id, r.t, r.n, id)) then
      id, r = s.id, record_get(F, s.id)
      j = j + 1
    elseif r then
      fifo.skip()
    else
      break
    end
    lease(F, id, r, q, until_ms, owner)
    out[#out + 1] = {id, r.u, key, r.e, r.a, until_ms, r.d or ''}
    out.bytes = out.bytes + #r.u + #(r.d or '') + 64
  end
  fifo.commit()
  -- Its member of ready names its last take: the old one goes, refresh adds the new one.
  redis.call('ZREM', F.ready, ready_member(key, q.t))
  q.t = now
  touch(F, key)
end

-- ARGV: settings, answer ttl s, '1' to delete the previous answer, lease ms, owner ('' none), then
-- pairs of a queue key and the most URLs to take from it. Each queue still ready is taken (its
-- in-flight and crawl limits kept). Replies per leased entry: id, URL, queue, epoch, attempts,
-- lease end ms, data ('' none); a retry of the same call gets the first reply.
local function ss_fq_take(keys, args)
  local F = fkeys(keys)
  local earlier = earlier_answer(F.answer, F.previous, args[5] == '1', tonumber(args[4]))
  if earlier then return cjson.decode(earlier) end
  local now
  F, now = fbegin(keys, args)
  local until_ms = now + tonumber(args[6])
  local owner = args[7] ~= '' and args[7] or nil
  local out = {bytes = 0}
  for i = 8, #args, 2 do
    if out.bytes >= TAKE_BYTES_MAX then break end
    local key = args[i]
    local q = queue_get(F, key)
    local at = q and ready_at(F, q)
    if at and at <= now then
      local n = math.min(tonumber(args[i + 1]), queue_room(F.inflight, q.k, q.c, q.l))
      take_queue(F, key, q, n, now, until_ms, owner, out)
    end
  end
  fflush(F)
  out.bytes = nil
  keep_answer(F.answer, cjson.encode(out), tonumber(args[4]))
  return out
end
