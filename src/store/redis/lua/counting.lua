-- Counting epochs (counting-v1, src/filters/counting.ts SpectralFilter): one byte per counter,
-- counter p at byte p; filter f of a slice is its primary, f + 1 its secondary. Positions as for
-- bits, a repeated cell written as NONE (skipped), so each cell counts once per URL.

local NONE = 4294967295

local function counter_at(key, p)
  local v = redis.call('GETRANGE', key, p, p)
  if v == '' then return 0 end
  return string.byte(v)
end

-- The minimum of the URL's k counters in filter f, and how many of them have it.
local function counter_min(b, at, f)
  local key, p0 = b.filters[f - 1], at + b.offsets[f] * 4
  local min, times = 256, 0
  for j = 0, b.hashes[f] - 1 do
    local p = u32(b.blob, p0 + j * 4)
    if p ~= NONE then
      local c = counter_at(key, p)
      if c < min then
        min = c
        times = 1
      elseif c == min then
        times = times + 1
      end
    end
  end
  return min, times
end

-- Adds `by` to the URL's counters in filter f (saturating at 255), or takes one off (by = -1;
-- a saturated counter stays, as it may count more than it shows).
local function counters_add(b, at, f, by)
  local key, p0 = b.filters[f - 1], at + b.offsets[f] * 4
  for j = 0, b.hashes[f] - 1 do
    local p = u32(b.blob, p0 + j * 4)
    if p ~= NONE then
      local c = counter_at(key, p)
      if by > 0 then
        redis.call('SETRANGE', key, p, string.char(math.min(255, c + by)))
      elseif c > 0 and c < 255 then
        redis.call('SETRANGE', key, p, string.char(c - 1))
      end
    end
  end
end

-- The spectral count of a URL in the slice whose primary is filter f: the recurring minimum,
-- else the secondary's when it is not 0.
local function slice_count(b, at, f)
  local primary, times = counter_min(b, at, f)
  if primary == 0 or times >= 2 then return primary end
  local secondary = counter_min(b, at, f + 1)
  if secondary > 0 then return math.min(secondary, primary) end
  return primary
end

local function slice_holds(b, at, f)
  return (counter_min(b, at, f)) > 0
end

local function slice_add(b, at, f)
  counters_add(b, at, f, 1)
  local primary, times = counter_min(b, at, f)
  if times < 2 then
    local secondary = counter_min(b, at, f + 1)
    if secondary > 0 then counters_add(b, at, f + 1, 1) else counters_add(b, at, f + 1, primary) end
  end
end

local function slice_remove(b, at, f)
  counters_add(b, at, f, -1)
  local _, times = counter_min(b, at, f)
  if times < 2 and counter_min(b, at, f + 1) > 0 then counters_add(b, at, f + 1, -1) end
end

-- As ss_add, for a counting epoch: each URL is counted in the oldest slice that holds it; a URL no
-- slice holds goes to the newest (growing first when it is full) and is new.
local function ss_count_add(keys, args)
  local early, b = batch_begin(keys, args)
  if early then return early end
  local first, added = b.first, b.added
  local cur, flags, fresh = b.have, {}, 0
  for i = 0, b.n - 1 do
    local at = i * b.per_url * 4 + 1
    local home = 0
    for s = 1, cur do
      if slice_holds(b, at, first[s]) then
        home = s
        break
      end
    end
    if home == 0 then
      cur = grow_if_full(b, cur)
      home = cur
      flags[i + 1] = '1'
      fresh = fresh + 1
      added[cur] = added[cur] + 1
    else
      flags[i + 1] = '0'
    end
    slice_add(b, at, first[home])
  end
  return batch_end(keys, args, b, cur, flags, fresh)
end

-- KEYS and ARGV: see read_begin. Per URL its count in the slice that holds it (0: none), one byte
-- each (saturating at 255).
local function ss_count(keys, args)
  local early, b = read_begin(keys, args, string.char(0))
  if early then return early end
  local out = {}
  for i = 0, b.n - 1 do
    local at = i * b.per_url * 4 + 1
    local c = 0
    for s = 1, b.have do
      c = slice_count(b, at, b.first[s])
      if c > 0 then break end
    end
    out[i + 1] = string.char(c)
  end
  return {'ok', table.concat(out)}
end

-- KEYS: state, slices, batch, previous batch, the filters. ARGV: slices assumed, n, geometry json,
-- positions, batch ttl s, '1' to delete the previous batch's answers. One occurrence of each URL
-- out of the slice that holds it; returns how many were deleted.
local function ss_count_delete(keys, args)
  local earlier = earlier_answer(keys[3], keys[4], args[6] == '1', tonumber(args[5]))
  if earlier then return {'done', earlier} end
  local open = redis.call('HGET', keys[1], 'open')
  if not open then return {'ok', '0'} end
  if open ~= '1' then return {'sealed'} end
  local have = redis.call('LLEN', keys[2])
  if have ~= tonumber(args[1]) then return {'stale', have} end
  local per_url, first, _, hashes, offsets = layout(cjson.decode(args[3]))
  local b = {blob = args[4], filters = filter_keys(keys, 5), hashes = hashes, offsets = offsets}
  local deleted = 0
  for i = 0, tonumber(args[2]) - 1 do
    local at = i * per_url * 4 + 1
    for s = 1, have do
      if slice_holds(b, at, first[s]) then
        slice_remove(b, at, first[s])
        deleted = deleted + 1
        break
      end
    end
  end
  keep_answer(keys[3], tostring(deleted), tonumber(args[5]))
  return {'ok', tostring(deleted)}
end
