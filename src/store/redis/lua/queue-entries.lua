-- The frontier's entries in a partition of its queues (queue-state.lua): admitted from the
-- inboxes, finished, given back, scheduled, found, listed.

-- An inbox id ('MS-SEQ') as two numbers.
local function parsed_inbox_id(id)
  local ms, n = string.match(id, '^(%d+)%-(%d+)$')
  return {tonumber(ms), tonumber(n)}
end

local function inbox_after(a, b)
  return a[1] > b[1] or (a[1] == b[1] and a[2] > b[2])
end

-- Queues a queue's admitted URLs (in inbox order) in its FIFO, in due order, then place, as
-- entries from id + 1 on; returns the last id it used.
local function admit_queue(F, key, group, id)
  for i, e in ipairs(group) do e.i = i end
  table.sort(group, function(a, b)
    if a.due ~= b.due then return a.due < b.due end
    if a.place ~= b.place then return a.place < b.place end
    return a.i < b.i
  end)
  local items = {}
  for _, e in ipairs(group) do
    id = id + 1
    -- Created when the add found it new: its due time, not the move into its queue.
    insert(F, id, e.url, e.h, key, e.epoch, e.due, e.place, e.data, e.due, IN_FIFO)
    items[#items + 1] = {id = id, t = e.due, n = e.place}
  end
  fifo_append(F, queue_get(F, key), items)
  return id
end

-- ARGV: settings, then per inbox entry (each inbox's in inbox order) its inbox, id, URL, queue
-- key, epoch, data, due ms and place among those due at once. Queues each entry past the mark of
-- what this partition admitted from its inbox (a repeated move admits nothing twice) whose URL is
-- not queued already. Replies how many it queued.
local function ss_fq_admit(keys, args)
  local F = fbegin(keys, args)
  local marks, fresh, hashes = {}, {}, {}
  for i = 4, #args, 8 do
    local source, id = args[i], parsed_inbox_id(args[i + 1])
    marks[source] = marks[source] or parsed_inbox_id(redis.call('HGET', F.marks, source) or '0-0')
    if inbox_after(id, marks[source]) then
      marks[source] = id
      fresh[#fresh + 1] = i
      hashes[#hashes + 1] = url_hash(args[i + 2])
    end
  end
  prefetch_buckets(F, hashes)
  local n, groups, order, seen = 0, {}, {}, {}
  for j, i in ipairs(fresh) do
    local url, key = args[i + 2], args[i + 3]
    if not seen[url] and not index_find(F, url, hashes[j]) then
      seen[url] = true
      if not groups[key] then
        groups[key] = {}
        order[#order + 1] = key
      end
      local group = groups[key]
      group[#group + 1] = {url = url, h = hashes[j], epoch = tonumber(args[i + 4]), data = args[i + 5],
        due = tonumber(args[i + 6]), place = tonumber(args[i + 7])}
      n = n + 1
    end
  end
  local id = n > 0 and redis.call('INCRBY', F.seq, n) - n or 0
  local ids = {}
  for k = 1, n do ids[k] = id + k end
  prefetch_pages(F, ids)
  for _, key in ipairs(order) do id = admit_queue(F, key, groups[key], id) end
  for source, mark in pairs(marks) do redis.call('HSET', F.marks, source, int(mark[1]) .. '-' .. int(mark[2])) end
  fflush(F)
  return n
end

-- The answer a retried call gets, or nil; else the partition and now (fbegin).
local function answered_begin(keys, args)
  local F = fkeys(keys)
  local earlier = earlier_answer(F.answer, F.previous, args[5] == '1', tonumber(args[4]))
  if earlier then return tonumber(earlier) end
  return nil, fbegin(keys, args)
end

local function answered_end(F, args, n)
  fflush(F)
  keep_answer(F.answer, n, tonumber(args[4]))
  return n
end

-- For each of the call's n ids (ARGV[6] = n, then the ids, then one value per id) that is an
-- entry here: act(F, id, record, value), true when it counts. Replies how many counted, answered
-- once.
local function answered_each(keys, args, act, removes)
  local earlier, F = answered_begin(keys, args)
  if earlier then return earlier end
  local n, count, ids = 0, tonumber(args[6]), {}
  for i = 1, count do ids[i] = tonumber(args[6 + i]) end
  prefetch_records(F, ids, removes)
  for i, id in ipairs(ids) do
    local r = record_get(F, id)
    if r and act(F, id, r, args[6 + count + i]) then n = n + 1 end
  end
  return answered_end(F, args, n)
end

-- ARGV: settings, answer ttl s, '1' to delete the previous answer, n, n ids, n refetch times ms
-- (0: none), then '1' when they failed (counted as failed, not done; absent: '0'). Finishes the
-- entries there (finish); replies how many were.
local function ss_fq_done(keys, args)
  local failed = args[7 + 2 * tonumber(args[6])] == '1'
  return answered_each(keys, args, function(F, id, r, refetch_ms)
    finish(F, id, r, tonumber(refetch_ms), failed)
    return true
  end, true)
end

-- ARGV: settings, answer ttl s, drop flag, n, n ids, n data ('' keeps the entry's). Gives back the
-- entries that are leased (waiting again at their due time, attempts kept); replies how many.
local function ss_fq_release(keys, args)
  return answered_each(keys, args, function(F, id, r, data)
    if r.st ~= LEASED then return false end
    if data ~= '' then r.d = data end
    unlease(F, id, r, queue_of(F, r.q))
    return true
  end)
end

-- ARGV: settings, answer ttl s, drop flag, owner. Gives back every running lease of the owner.
local function ss_fq_reclaim(keys, args)
  local earlier, F = answered_begin(keys, args)
  if earlier then return earlier end
  local n = 0
  for _, member in ipairs(redis.call('ZRANGE', F.leases, 0, -1)) do
    local id = tonumber(member)
    local r = record_get(F, id)
    if r and r.o == args[6] then
      n = n + 1
      unlease(F, id, r, queue_of(F, r.q))
    end
  end
  return answered_end(F, args, n)
end

-- One URL scheduled at at_ms in queue key (known URLs, URLFrontier's KnownURLItem), `place`
-- among those scheduled at once: a queued entry moves there (lease ended), else one is created;
-- 0 finishes a queued one instead. Returns 1 when the URL now waits.
local function schedule_one(F, url, key, at_ms, place, data)
  local id, r, h = index_find(F, url)
  if at_ms == 0 then
    if r then finish(F, id, r, 0) end
    return 0
  end
  if not r then
    insert(F, redis.call('INCR', F.seq), url, h, key, 0, at_ms, place, data, now_ms(), IN_SET)
    return 1
  end
  detach(F, id, r, queue_of(F, r.q))
  local q = queue_of(F, key)
  r.qn, r.q, r.t, r.n = q.qn, key, at_ms, place
  if data ~= '' then r.d = data end
  to_set(F, id, r, q)
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
    local id, r = index_find(F, args[i])
    if r then
      remove(F, id, r, queue_of(F, r.q))
      n = n + 1
    end
  end
  fflush(F)
  return n
end

-- ARGV: settings, cutoff ms, ids. Removes the entries of the ids created before the cutoff
-- without finishing them (URLFrontier's PurgeURLs); replies how many.
local function ss_fq_purge(keys, args)
  local F = fbegin(keys, args)
  local cutoff, n, ids = tonumber(args[4]), 0, {}
  for i = 5, #args do ids[#ids + 1] = tonumber(args[i]) end
  prefetch_records(F, ids, true)
  for _, id in ipairs(ids) do
    local r = record_get(F, id)
    if r and r.c < cutoff then
      remove(F, id, r, queue_of(F, r.q))
      n = n + 1
    end
  end
  fflush(F)
  return n
end

-- ARGV: URLs. Replies Redis's now, then per URL its id and entry JSON ('' and '' when it is not
-- queued here). Reads only.
local function ss_fq_find(keys, args)
  local F = fkeys(keys)
  local out = {now_ms()}
  for i = 1, #args do
    local id, r = index_find(F, args[i])
    out[#out + 1] = r and id or ''
    out[#out + 1] = r and entry_json(r) or ''
  end
  return out
end

-- ARGV: cursor, count. One HSCAN page of the entries' pages: replies the next cursor ('0': the
-- end), then per entry its id and entry JSON. Reads only.
local function ss_fq_scan(keys, args)
  local F = fkeys(keys)
  local reply = redis.call('HSCAN', F.pg, args[1], 'COUNT', args[2])
  local out = {reply[1]}
  local flat = reply[2]
  for i = 1, #flat, 2 do
    local p = tonumber(flat[i])
    F.pages[p] = page_decode(flat[i + 1], F.pg .. ' page ' .. flat[i])
    for slot = 0, PAGE_ENTRIES - 1 do
      local id = p * PAGE_ENTRIES + slot
      local r = record_get(F, id)
      if r then
        out[#out + 1] = id
        out[#out + 1] = entry_json(r)
      end
    end
  end
  return out
end
