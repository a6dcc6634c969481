-- The frontier's entries in a partition of its queues (queue-state.lua): admitted from the
-- inboxes, finished, given back, scheduled, found.

-- Whether inbox id a ('MS-SEQ') comes after b.
local function inbox_after(a, b)
  local am, as = string.match(a, '^(%d+)%-(%d+)$')
  local bm, bs = string.match(b, '^(%d+)%-(%d+)$')
  am, bm = tonumber(am), tonumber(bm)
  return am > bm or (am == bm and tonumber(as) > tonumber(bs))
end

-- ARGV: settings, then per inbox entry (each inbox's in inbox order) its inbox, id, URL, queue
-- key, epoch, data, due ms and place among those due at once. Queues each entry past the mark of
-- what this partition admitted from its inbox (a repeated move admits nothing twice) whose URL is
-- not queued already. Replies how many it queued.
local function ss_fq_admit(keys, args)
  local F = fbegin(keys, args)
  local marks, n, touched = {}, 0, {}
  for i = 4, #args, 8 do
    local source, id, url, key = args[i], args[i + 1], args[i + 2], args[i + 3]
    marks[source] = marks[source] or redis.call('HGET', F.marks, source) or '0-0'
    if inbox_after(id, marks[source]) then
      marks[source] = id
      if redis.call('HEXISTS', F.url, url) == 0 then
        -- Created when the add found it new: its due time, not the move into its queue.
        insert(F, url, key, tonumber(args[i + 4]), tonumber(args[i + 6]), tonumber(args[i + 7]), args[i + 5],
          tonumber(args[i + 6]))
        touched[key] = true
        n = n + 1
      end
    end
  end
  for source, mark in pairs(marks) do redis.call('HSET', F.marks, source, mark) end
  for key in pairs(touched) do refresh(F, key) end
  return n
end

-- The answer a retried call gets, or nil; else the keys and now (fbegin).
local function answered_begin(keys, args)
  local F = fkeys(keys)
  local earlier = earlier_answer(F.answer, F.previous, args[5] == '1', tonumber(args[4]))
  if earlier then return tonumber(earlier) end
  return nil, fbegin(keys, args)
end

local function answered_end(F, args, n)
  keep_answer(F.answer, n, tonumber(args[4]))
  return n
end

-- For each of the call's n ids (ARGV[6] = n, then the ids, then one value per id) that is an
-- entry here: act(F, id, entry, value), true when it counts. Replies how many counted, answered
-- once.
local function answered_each(keys, args, act)
  local earlier, F = answered_begin(keys, args)
  if earlier then return earlier end
  local n, count = 0, tonumber(args[6])
  for i = 1, count do
    local id = args[6 + i]
    local e = entry_get(F, id)
    if e and act(F, id, e, args[6 + count + i]) then n = n + 1 end
  end
  return answered_end(F, args, n)
end

-- ARGV: settings, answer ttl s, '1' to delete the previous answer, n, n ids, n refetch times ms
-- (0: none), then '1' when they failed (counted as failed, not done; absent: '0'). Finishes the
-- entries there (finish); replies how many were.
local function ss_fq_done(keys, args)
  local failed = args[7 + 2 * tonumber(args[6])] == '1'
  return answered_each(keys, args, function(F, id, e, refetch_ms)
    finish(F, id, e, tonumber(refetch_ms), failed)
    return true
  end)
end

-- ARGV: settings, answer ttl s, drop flag, n, n ids, n data ('' keeps the entry's). Gives back the
-- entries that are leased (waiting again at their due time, attempts kept); replies how many.
local function ss_fq_release(keys, args)
  return answered_each(keys, args, function(F, id, e, data)
    if e.l == 0 then return false end
    unlease(F, id, e)
    if data ~= '' then e.d = data end
    entry_put(F, id, e)
    refresh(F, e.q)
    return true
  end)
end

-- ARGV: settings, answer ttl s, drop flag, owner. Gives back every running lease of the owner.
local function ss_fq_reclaim(keys, args)
  local earlier, F = answered_begin(keys, args)
  if earlier then return earlier end
  local n, touched = 0, {}
  for _, id in ipairs(redis.call('ZRANGE', F.leases, 0, -1)) do
    local e = entry_get(F, id)
    if e and e.o == args[6] then
      n = n + 1
      unlease(F, id, e)
      entry_put(F, id, e)
      touched[e.q] = true
    end
  end
  for key in pairs(touched) do refresh(F, key) end
  return answered_end(F, args, n)
end

-- One URL scheduled at at_ms in queue key (known URLs, URLFrontier's KnownURLItem), `place`
-- among those scheduled at once: a queued entry moves there (lease ended), else one is created;
-- 0 finishes a queued one instead. Returns 1 when the URL now waits.
local function schedule_one(F, url, key, at_ms, place, data)
  local id = redis.call('HGET', F.url, url)
  local e = id and entry_get(F, id)
  if at_ms == 0 then
    if e then finish(F, id, e, 0) end
    return 0
  end
  if not e then
    insert(F, url, key, 0, at_ms, place, data, now_ms())
    refresh(F, key)
    return 1
  end
  local from = e.q
  detach(F, id, e)
  e.q, e.t, e.n = key, at_ms, place
  if data ~= '' then e.d = data end
  attach(F, id, e)
  entry_put(F, id, e)
  if redis.call('HEXISTS', F.qs, key) == 0 then queue_put(F, key, {c = 0}) end
  refresh(F, from)
  if from ~= key then refresh(F, key) end
  return 1
end

-- ARGV: settings, answer ttl s, drop flag, n, then per URL its URL, queue key, time ms, data.
-- Replies how many URLs now wait.
local function ss_fq_schedule(keys, args)
  local earlier, F = answered_begin(keys, args)
  if earlier then return earlier end
  local n = 0
  for i = 7, 6 + 4 * tonumber(args[6]), 4 do
    n = n + schedule_one(F, args[i], args[i + 1], tonumber(args[i + 2]), (i - 7) / 4, args[i + 3])
  end
  return answered_end(F, args, n)
end

-- ARGV: settings, URLs. Removes their entries without finishing them (a schedule moving them to
-- a queue of another partition); replies how many were there.
local function ss_fq_forget(keys, args)
  local F = fbegin(keys, args)
  local n = 0
  for i = 4, #args do
    local id = redis.call('HGET', F.url, args[i])
    local e = id and entry_get(F, id)
    if e then
      remove(F, id, e)
      refresh(F, e.q)
      n = n + 1
    end
  end
  return n
end

-- ARGV: settings, cutoff ms, ids. Removes the entries of the ids created before the cutoff
-- (an entry written before creation times were kept: its due time), without finishing them
-- (URLFrontier's PurgeURLs); replies how many.
local function ss_fq_purge(keys, args)
  local F = fbegin(keys, args)
  local cutoff, n, touched = tonumber(args[4]), 0, {}
  for i = 5, #args do
    local e = entry_get(F, args[i])
    if e and (e.c or e.t) < cutoff then
      remove(F, args[i], e)
      touched[e.q] = true
      n = n + 1
    end
  end
  for key in pairs(touched) do refresh(F, key) end
  return n
end

-- KEYS: url, ent. ARGV: URLs. Replies Redis's now, then per URL its id and entry JSON ('' and ''
-- when it is not queued here).
local function ss_fq_find(keys, args)
  local out = {now_ms()}
  for i = 1, #args do
    local id = redis.call('HGET', keys[1], args[i])
    local json = id and redis.call('HGET', keys[2], id)
    out[#out + 1] = json and id or ''
    out[#out + 1] = json or ''
  end
  return out
end
