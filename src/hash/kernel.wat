;; The hot-path kernel: xxh64 of many keys under many seeds in one pass, and the add-if-absent
;; decision of a batch over filters whose bits live in this module's memory. Built by
;; scripts/build-kernel.mjs (wat2wasm from Debian's wabt, --enable-threads) into
;; src/hash/kernel-wasm.ts, twice: as written, and with the memory import not shared;
;; test/kernel.test.ts checks that the committed bytes are what this file compiles to, and that
;; hashes, bits and answers equal the JavaScript path's.
;;
;; The memory is imported. Shared, views of it (a filter's bytes in JavaScript) stay valid when it
;; grows; private (hashing alone), JavaScript copies keys into it faster. The module itself is
;; single-threaded: no atomics.
;;
;; hashRanges(ranges, count, seeds, seedCount, out, strideBytes, controls): key i spans
;; [ranges[2i], ranges[2i + 1]) (u32 addresses in this memory); its xxh64 under seed s (u64 at
;; seeds + 8s) is stored as a little-endian u64 at out + i * strideBytes + 8s. Every seed of a key is
;; hashed while its bytes are in the cache. Returns -1; with `controls` 1, a key that holds a
;; control byte (0x00-0x1F or 0x7F: no URL holds one) stops the call before it is hashed, and its
;; index is returned.
;;
;; controlAt(from, to): where the first control byte of [from, to) is, line ends left aside (an LF,
;; and a CR right before an LF inside the range); `to` when there is none. For the line reader,
;; over a block of input lines (src/cli/lines.ts).
;;
;; decide(plan, words, strideBytes, from, to, room, flags): the add-if-absent decision of URLs
;; from..to - 1, stopping after `room` new ones; returns how many were decided, and `fresh()` how
;; many of those were new. URL i's hashes start at words + i * strideBytes. The plan (see
;; src/filters/kernel-plan.ts) lists the slices (older ones only answer; the newest takes the new
;; URLs) and, per filter, its geometry, where its bits and dirty flags are, and where its hash sits
;; among a URL's words; the filter's entry accumulates the bits it set. flags[i] = 1 when URL i was
;; new, else 0. Exactly decideRange (src/filters/decide.ts) and BloomFilter's add and has.
(module
  (import "env" "mem" (memory 1 65536 shared))
  (global $fresh (mut i32) (i32.const 0))

  ;; Plan layout: i32 sliceCount at 0; slice j's first filter and filter count at 8 + 8j;
  ;; filter entries of 48 bytes from FILTERS_AT = 256.
  ;; Filter entry: i64 mBits @0, i32 k @8, i32 layout @12 (0 classic, 1 blocked), i32 growth @16,
  ;; i32 bits @20, i32 dirty @24, i32 regionBytes @28, i32 wordAt (bytes) @32, i32 setBits @36,
  ;; i32 blocks @40.

  ;; The xxh64 rounds are written out inline: V8 does not inline wasm calls here (Node 20).
  (func $xxh64 (param $p i32) (param $len i32) (param $seed i64) (result i64)
    (local $end i32) (local $limit i32) (local $h i64)
    (local $v1 i64) (local $v2 i64) (local $v3 i64) (local $v4 i64)
    (local.set $end (i32.add (local.get $p) (local.get $len)))
    (if (i32.ge_u (local.get $len) (i32.const 32))
      (then
        (local.set $limit (i32.sub (local.get $end) (i32.const 32)))
        (local.set $v1 (i64.add (local.get $seed) (i64.const 0x60EA27EEADC0B5D6)))
        (local.set $v2 (i64.add (local.get $seed) (i64.const 0xC2B2AE3D27D4EB4F)))
        (local.set $v3 (local.get $seed))
        (local.set $v4 (i64.sub (local.get $seed) (i64.const 0x9E3779B185EBCA87)))
        (loop $stripes
          (local.set $v1 (i64.mul (i64.rotl (i64.add (local.get $v1) (i64.mul (i64.load (local.get $p)) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87)))
          (local.set $v2 (i64.mul (i64.rotl (i64.add (local.get $v2) (i64.mul (i64.load offset=8 (local.get $p)) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87)))
          (local.set $v3 (i64.mul (i64.rotl (i64.add (local.get $v3) (i64.mul (i64.load offset=16 (local.get $p)) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87)))
          (local.set $v4 (i64.mul (i64.rotl (i64.add (local.get $v4) (i64.mul (i64.load offset=24 (local.get $p)) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87)))
          (local.set $p (i32.add (local.get $p) (i32.const 32)))
          (br_if $stripes (i32.le_u (local.get $p) (local.get $limit))))
        (local.set $h
          (i64.add
            (i64.add (i64.rotl (local.get $v1) (i64.const 1)) (i64.rotl (local.get $v2) (i64.const 7)))
            (i64.add (i64.rotl (local.get $v3) (i64.const 12)) (i64.rotl (local.get $v4) (i64.const 18)))))
        (local.set $h (i64.add (i64.mul (i64.xor (local.get $h) (i64.mul (i64.rotl (i64.add (i64.const 0) (i64.mul (local.get $v1) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87))) (i64.const 0x9E3779B185EBCA87)) (i64.const 0x85EBCA77C2B2AE63)))
        (local.set $h (i64.add (i64.mul (i64.xor (local.get $h) (i64.mul (i64.rotl (i64.add (i64.const 0) (i64.mul (local.get $v2) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87))) (i64.const 0x9E3779B185EBCA87)) (i64.const 0x85EBCA77C2B2AE63)))
        (local.set $h (i64.add (i64.mul (i64.xor (local.get $h) (i64.mul (i64.rotl (i64.add (i64.const 0) (i64.mul (local.get $v3) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87))) (i64.const 0x9E3779B185EBCA87)) (i64.const 0x85EBCA77C2B2AE63)))
        (local.set $h (i64.add (i64.mul (i64.xor (local.get $h) (i64.mul (i64.rotl (i64.add (i64.const 0) (i64.mul (local.get $v4) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87))) (i64.const 0x9E3779B185EBCA87)) (i64.const 0x85EBCA77C2B2AE63))))
      (else
        (local.set $h (i64.add (local.get $seed) (i64.const 0x27D4EB2F165667C5)))))
    (local.set $h (i64.add (local.get $h) (i64.extend_i32_u (local.get $len))))
    (block $words_done
      (loop $words
        (br_if $words_done (i32.gt_u (i32.add (local.get $p) (i32.const 8)) (local.get $end)))
        (local.set $h
          (i64.add
            (i64.mul
              (i64.rotl (i64.xor (local.get $h) (i64.mul (i64.rotl (i64.add (i64.const 0) (i64.mul (i64.load (local.get $p)) (i64.const 0xC2B2AE3D27D4EB4F))) (i64.const 31)) (i64.const 0x9E3779B185EBCA87))) (i64.const 27))
              (i64.const 0x9E3779B185EBCA87))
            (i64.const 0x85EBCA77C2B2AE63)))
        (local.set $p (i32.add (local.get $p) (i32.const 8)))
        (br $words)))
    (if (i32.le_u (i32.add (local.get $p) (i32.const 4)) (local.get $end))
      (then
        (local.set $h
          (i64.add
            (i64.mul
              (i64.rotl
                (i64.xor (local.get $h) (i64.mul (i64.load32_u (local.get $p)) (i64.const 0x9E3779B185EBCA87)))
                (i64.const 23))
              (i64.const 0xC2B2AE3D27D4EB4F))
            (i64.const 0x165667B19E3779F9)))
        (local.set $p (i32.add (local.get $p) (i32.const 4)))))
    (block $bytes_done
      (loop $bytes
        (br_if $bytes_done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $h
          (i64.mul
            (i64.rotl
              (i64.xor (local.get $h) (i64.mul (i64.load8_u (local.get $p)) (i64.const 0x27D4EB2F165667C5)))
              (i64.const 11))
            (i64.const 0x9E3779B185EBCA87)))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $bytes)))
    (local.set $h (i64.mul (i64.xor (local.get $h) (i64.shr_u (local.get $h) (i64.const 33))) (i64.const 0xC2B2AE3D27D4EB4F)))
    (local.set $h (i64.mul (i64.xor (local.get $h) (i64.shr_u (local.get $h) (i64.const 29))) (i64.const 0x165667B19E3779F9)))
    (i64.xor (local.get $h) (i64.shr_u (local.get $h) (i64.const 32))))

  (func (export "hashRanges") (param $ranges i32) (param $count i32) (param $seeds i32) (param $seedCount i32) (param $out i32) (param $strideBytes i32) (param $controls i32) (result i32)
    (local $i i32) (local $s i32) (local $start i32) (local $len i32) (local $at i32) (local $row i32)
    (local $p i32) (local $v v128) (local $seen v128) (local $x20 v128) (local $del v128)
    (local.set $x20 (v128.const i8x16 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20))
    (local.set $del (v128.const i8x16 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f))
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        (local.set $at (i32.add (local.get $ranges) (i32.shl (local.get $i) (i32.const 3))))
        (local.set $start (i32.load (local.get $at)))
        (local.set $len (i32.sub (i32.load offset=4 (local.get $at)) (local.get $start)))
        ;; Control bytes, sixteen at a time: a lane of 0x20 -sat v is not 0 exactly when v is below
        ;; 0x20. The last sixteen overlap the ones before (no byte-by-byte tail); a key shorter
        ;; than 16 bytes is looked at byte by byte. Written out here: V8 does not inline wasm
        ;; calls (Node 20), and it would build the constants again in every call.
        (if (local.get $controls)
          (then
            (if (i32.lt_u (local.get $len) (i32.const 16))
              (then
                (if (call $holdsControl (local.get $start) (local.get $len))
                  (then (return (local.get $i)))))
              (else
                (local.set $v (v128.load (i32.sub (i32.add (local.get $start) (local.get $len)) (i32.const 16))))
                (local.set $seen (v128.or (i8x16.sub_sat_u (local.get $x20) (local.get $v)) (i8x16.eq (local.get $v) (local.get $del))))
                (local.set $p (local.get $start))
                (block $chunks_done
                  (loop $chunk
                    (br_if $chunks_done (i32.ge_u (i32.add (local.get $p) (i32.const 16)) (i32.add (local.get $start) (local.get $len))))
                    (local.set $v (v128.load (local.get $p)))
                    (local.set $seen
                      (v128.or (local.get $seen)
                        (v128.or (i8x16.sub_sat_u (local.get $x20) (local.get $v)) (i8x16.eq (local.get $v) (local.get $del)))))
                    (local.set $p (i32.add (local.get $p) (i32.const 16)))
                    (br $chunk)))
                (if (v128.any_true (local.get $seen))
                  (then (return (local.get $i))))))))
        (local.set $row (i32.add (local.get $out) (i32.mul (local.get $i) (local.get $strideBytes))))
        (local.set $s (i32.const 0))
        (block $seeds_done
          (loop $seed
            (br_if $seeds_done (i32.ge_u (local.get $s) (local.get $seedCount)))
            (i64.store
              (i32.add (local.get $row) (i32.shl (local.get $s) (i32.const 3)))
              (call $xxh64 (local.get $start) (local.get $len)
                (i64.load (i32.add (local.get $seeds) (i32.shl (local.get $s) (i32.const 3))))))
            (local.set $s (i32.add (local.get $s) (i32.const 1)))
            (br $seed)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))
    (i32.const -1))

  ;; 1 when the $len bytes at $p hold a control byte (below 0x20, or 0x7F), byte by byte.
  (func $holdsControl (param $p i32) (param $len i32) (result i32)
    (local $end i32) (local $b i32)
    (local.set $end (i32.add (local.get $p) (local.get $len)))
    (block $done
      (loop $byte
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $b (i32.load8_u (local.get $p)))
        (if (i32.or (i32.lt_u (local.get $b) (i32.const 0x20)) (i32.eq (local.get $b) (i32.const 0x7f)))
          (then (return (i32.const 1))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $byte)))
    (i32.const 0))

  ;; Sixty-four bytes at a time, a lane is suspect when its byte is a control byte other than LF:
  ;; t = v xor 0x0A takes LF to 0 and keeps the other control bytes below 0x20, not 0; then
  ;; 0x1F -sat (t - 1) is not 0 exactly for t in 1..0x1F; and 0x7F. A chunk with a suspect lane (in a
  ;; CRLF file, every line's CR) is looked at again with the byte after each, its line-ending CRs
  ;; left aside; the last bytes (fewer than 65) one by one. The constants are in locals: V8 would
  ;; build each again in every round of the loop.
  (func (export "controlAt") (param $p i32) (param $to i32) (result i32)
    (local $a v128) (local $b v128) (local $c v128) (local $d v128) (local $bits i64) (local $found i32)
    (local $lf v128) (local $cr v128) (local $one v128) (local $x1f v128) (local $x20 v128) (local $del v128)
    (local.set $lf (v128.const i8x16 0x0a 0x0a 0x0a 0x0a 0x0a 0x0a 0x0a 0x0a 0x0a 0x0a 0x0a 0x0a 0x0a 0x0a 0x0a 0x0a))
    (local.set $cr (v128.const i8x16 0x0d 0x0d 0x0d 0x0d 0x0d 0x0d 0x0d 0x0d 0x0d 0x0d 0x0d 0x0d 0x0d 0x0d 0x0d 0x0d))
    (local.set $one (v128.const i8x16 0x01 0x01 0x01 0x01 0x01 0x01 0x01 0x01 0x01 0x01 0x01 0x01 0x01 0x01 0x01 0x01))
    (local.set $x1f (v128.const i8x16 0x1f 0x1f 0x1f 0x1f 0x1f 0x1f 0x1f 0x1f 0x1f 0x1f 0x1f 0x1f 0x1f 0x1f 0x1f 0x1f))
    (local.set $x20 (v128.const i8x16 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20 0x20))
    (local.set $del (v128.const i8x16 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f 0x7f))
    (block $tail
      (loop $chunk
        ;; The byte after the chunk is read too (it may end a CR at the chunk's end).
        (br_if $tail (i32.gt_u (i32.add (local.get $p) (i32.const 65)) (local.get $to)))
        (local.set $a (v128.load (local.get $p)))
        (local.set $b (v128.load offset=16 (local.get $p)))
        (local.set $c (v128.load offset=32 (local.get $p)))
        (local.set $d (v128.load offset=48 (local.get $p)))
        (if (v128.any_true
              (v128.or
                (v128.or
                  (v128.or
                  (i8x16.sub_sat_u (local.get $x1f) (i8x16.sub (v128.xor (local.get $a) (local.get $lf)) (local.get $one)))
                  (i8x16.eq (local.get $a) (local.get $del)))
                  (v128.or
                  (i8x16.sub_sat_u (local.get $x1f) (i8x16.sub (v128.xor (local.get $b) (local.get $lf)) (local.get $one)))
                  (i8x16.eq (local.get $b) (local.get $del))))
                (v128.or
                  (v128.or
                  (i8x16.sub_sat_u (local.get $x1f) (i8x16.sub (v128.xor (local.get $c) (local.get $lf)) (local.get $one)))
                  (i8x16.eq (local.get $c) (local.get $del)))
                  (v128.or
                  (i8x16.sub_sat_u (local.get $x1f) (i8x16.sub (v128.xor (local.get $d) (local.get $lf)) (local.get $one)))
                  (i8x16.eq (local.get $d) (local.get $del))))))
          (then
            (local.set $bits
              (i64.or
                (i64.or
                  (i64.extend_i32_u (i8x16.bitmask
                    (v128.andnot
                      (v128.or (i8x16.lt_u (local.get $a) (local.get $x20)) (i8x16.eq (local.get $a) (local.get $del)))
                      (v128.or
                        (i8x16.eq (local.get $a) (local.get $lf))
                        (v128.and (i8x16.eq (local.get $a) (local.get $cr)) (i8x16.eq (v128.load offset=1 (local.get $p)) (local.get $lf)))))))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask
                    (v128.andnot
                      (v128.or (i8x16.lt_u (local.get $b) (local.get $x20)) (i8x16.eq (local.get $b) (local.get $del)))
                      (v128.or
                        (i8x16.eq (local.get $b) (local.get $lf))
                        (v128.and (i8x16.eq (local.get $b) (local.get $cr)) (i8x16.eq (v128.load offset=17 (local.get $p)) (local.get $lf))))))) (i64.const 16)))
                (i64.or
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask
                    (v128.andnot
                      (v128.or (i8x16.lt_u (local.get $c) (local.get $x20)) (i8x16.eq (local.get $c) (local.get $del)))
                      (v128.or
                        (i8x16.eq (local.get $c) (local.get $lf))
                        (v128.and (i8x16.eq (local.get $c) (local.get $cr)) (i8x16.eq (v128.load offset=33 (local.get $p)) (local.get $lf))))))) (i64.const 32))
                  (i64.shl (i64.extend_i32_u (i8x16.bitmask
                    (v128.andnot
                      (v128.or (i8x16.lt_u (local.get $d) (local.get $x20)) (i8x16.eq (local.get $d) (local.get $del)))
                      (v128.or
                        (i8x16.eq (local.get $d) (local.get $lf))
                        (v128.and (i8x16.eq (local.get $d) (local.get $cr)) (i8x16.eq (v128.load offset=49 (local.get $p)) (local.get $lf))))))) (i64.const 48)))))
            (if (i64.ne (local.get $bits) (i64.const 0))
              (then (return (i32.add (local.get $p) (i32.wrap_i64 (i64.ctz (local.get $bits)))))))))
        (local.set $p (i32.add (local.get $p) (i32.const 64)))
        (br $chunk)))
    (local.set $found (call $firstControl (local.get $p) (local.get $to) (local.get $to)))
    (select (local.get $to) (local.get $found) (i32.lt_s (local.get $found) (i32.const 0))))

  ;; The first control byte of [$p, $end) that ends no line (an LF, or a CR whose next byte, below
  ;; $to, is an LF), byte by byte; -1 when there is none.
  (func $firstControl (param $p i32) (param $end i32) (param $to i32) (result i32)
    (local $b i32)
    (block $done
      (loop $byte
        (br_if $done (i32.ge_u (local.get $p) (local.get $end)))
        (local.set $b (i32.load8_u (local.get $p)))
        (if (i32.and
              (i32.or (i32.lt_u (local.get $b) (i32.const 0x20)) (i32.eq (local.get $b) (i32.const 0x7f)))
              (i32.ne (local.get $b) (i32.const 0x0a)))
          (then
            (if (i32.ne (local.get $b) (i32.const 0x0d))
              (then (return (local.get $p))))
            (if (i32.ge_u (i32.add (local.get $p) (i32.const 1)) (local.get $to))
              (then (return (local.get $p))))
            (if (i32.ne (i32.load8_u offset=1 (local.get $p)) (i32.const 0x0a))
              (then (return (local.get $p))))))
        (local.set $p (i32.add (local.get $p) (i32.const 1)))
        (br $byte)))
    (i32.const -1))

  ;; Sets the filter's positions of hash $h; returns the bits that were clear (0: it held the URL).
  (func $add (param $f i32) (param $h i64) (result i32)
    (if (result i32) (i32.load offset=12 (local.get $f))
      (then (call $addBlocked (local.get $f) (local.get $h)))
      (else (call $addClassic (local.get $f) (local.get $h)))))

  ;; 1 when every position of hash $h is set in the filter.
  (func $has (param $f i32) (param $h i64) (result i32)
    (if (result i32) (i32.load offset=12 (local.get $f))
      (then (call $hasBlocked (local.get $f) (local.get $h)))
      (else (call $hasClassic (local.get $f) (local.get $h)))))

  ;; Classic: p = h mod m, step = 1 + (h >> 32) mod (m - 1); after probe i, p += step and step
  ;; grows by growth * (i + 1), both mod m (scheme.ts classicPositions).
  (func $addClassic (param $f i32) (param $h i64) (result i32)
    (local $m i64) (local $p i64) (local $step i64) (local $grow i64) (local $growth i64)
    (local $i i32) (local $k i32) (local $bits i32) (local $at i32) (local $old i32) (local $clear i32) (local $set i32)
    (local.set $m (i64.load (local.get $f)))
    (local.set $k (i32.load offset=8 (local.get $f)))
    (local.set $growth (i64.load32_u offset=16 (local.get $f)))
    (local.set $bits (i32.load offset=20 (local.get $f)))
    (local.set $p (i64.rem_u (local.get $h) (local.get $m)))
    (local.set $step (i64.add (i64.const 1) (i64.rem_u (i64.shr_u (local.get $h) (i64.const 32)) (i64.sub (local.get $m) (i64.const 1)))))
    (block $done
      (loop $probe
        (br_if $done (i32.ge_u (local.get $i) (local.get $k)))
        (local.set $at (i32.wrap_i64 (i64.shr_u (local.get $p) (i64.const 3))))
        (local.set $old (i32.load8_u (i32.add (local.get $bits) (local.get $at))))
        (local.set $clear (i32.and (i32.shr_u (i32.xor (local.get $old) (i32.const -1)) (i32.wrap_i64 (i64.and (local.get $p) (i64.const 7)))) (i32.const 1)))
        (if (local.get $clear)
          (then
            (i32.store8 (i32.add (local.get $bits) (local.get $at))
              (i32.or (local.get $old) (i32.shl (i32.const 1) (i32.wrap_i64 (i64.and (local.get $p) (i64.const 7))))))
            (i32.store8 (i32.add (i32.load offset=24 (local.get $f)) (i32.div_u (local.get $at) (i32.load offset=28 (local.get $f)))) (i32.const 1))
            (local.set $set (i32.add (local.get $set) (i32.const 1)))))
        (local.set $p (i64.add (local.get $p) (local.get $step)))
        (local.set $p (select (i64.sub (local.get $p) (local.get $m)) (local.get $p) (i64.ge_u (local.get $p) (local.get $m))))
        (local.set $grow (i64.add (local.get $grow) (local.get $growth)))
        (local.set $step (i64.add (local.get $step) (local.get $grow)))
        (local.set $step (select (i64.sub (local.get $step) (local.get $m)) (local.get $step) (i64.ge_u (local.get $step) (local.get $m))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $probe)))
    (i32.store offset=36 (local.get $f) (i32.add (i32.load offset=36 (local.get $f)) (local.get $set)))
    (local.get $set))

  (func $hasClassic (param $f i32) (param $h i64) (result i32)
    (local $m i64) (local $p i64) (local $step i64) (local $grow i64) (local $growth i64)
    (local $i i32) (local $k i32) (local $bits i32)
    (local.set $m (i64.load (local.get $f)))
    (local.set $k (i32.load offset=8 (local.get $f)))
    (local.set $growth (i64.load32_u offset=16 (local.get $f)))
    (local.set $bits (i32.load offset=20 (local.get $f)))
    (local.set $p (i64.rem_u (local.get $h) (local.get $m)))
    (local.set $step (i64.add (i64.const 1) (i64.rem_u (i64.shr_u (local.get $h) (i64.const 32)) (i64.sub (local.get $m) (i64.const 1)))))
    (block $done
      (loop $probe
        (br_if $done (i32.ge_u (local.get $i) (local.get $k)))
        (if (i32.eqz
              (i32.and
                (i32.load8_u (i32.add (local.get $bits) (i32.wrap_i64 (i64.shr_u (local.get $p) (i64.const 3)))))
                (i32.shl (i32.const 1) (i32.wrap_i64 (i64.and (local.get $p) (i64.const 7))))))
          (then (return (i32.const 0))))
        (local.set $p (i64.add (local.get $p) (local.get $step)))
        (local.set $p (select (i64.sub (local.get $p) (local.get $m)) (local.get $p) (i64.ge_u (local.get $p) (local.get $m))))
        (local.set $grow (i64.add (local.get $grow) (local.get $growth)))
        (local.set $step (i64.add (local.get $step) (local.get $grow)))
        (local.set $step (select (i64.sub (local.get $step) (local.get $m)) (local.get $step) (i64.ge_u (local.get $step) (local.get $m))))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $probe)))
    (i32.const 1))

  ;; Blocked: the block is (h mod 2^32) mod blocks; inside its 512 bits, q = hi mod 512 and the
  ;; step d = (hi >> 9) mod 512 (| 1 under v1) grows by e + i + 1 after probe i (v1: by 0), with
  ;; e = (hi >> 18) mod 512 (scheme.ts blockedPositions).
  (func $addBlocked (param $f i32) (param $h i64) (result i32)
    (local $hi i32) (local $growth i32) (local $base i32) (local $e i32) (local $q i32) (local $step i32)
    (local $i i32) (local $k i32) (local $at i32) (local $old i32) (local $set i32)
    (local.set $hi (i32.wrap_i64 (i64.shr_u (local.get $h) (i64.const 32))))
    (local.set $k (i32.load offset=8 (local.get $f)))
    (local.set $growth (i32.load offset=16 (local.get $f)))
    (local.set $base (i32.shl (i32.rem_u (i32.wrap_i64 (local.get $h)) (i32.load offset=40 (local.get $f))) (i32.const 6)))
    (local.set $e (i32.mul (i32.and (i32.shr_u (local.get $hi) (i32.const 18)) (i32.const 511)) (local.get $growth)))
    (local.set $q (i32.and (local.get $hi) (i32.const 511)))
    (local.set $step (i32.or (i32.and (i32.shr_u (local.get $hi) (i32.const 9)) (i32.const 511)) (i32.sub (i32.const 1) (local.get $growth))))
    (block $done
      (loop $probe
        (br_if $done (i32.ge_u (local.get $i) (local.get $k)))
        (local.set $at (i32.add (i32.load offset=20 (local.get $f)) (i32.add (local.get $base) (i32.shr_u (local.get $q) (i32.const 3)))))
        (local.set $old (i32.load8_u (local.get $at)))
        (local.set $set (i32.add (local.get $set)
          (i32.and (i32.shr_u (i32.xor (local.get $old) (i32.const -1)) (i32.and (local.get $q) (i32.const 7))) (i32.const 1))))
        (i32.store8 (local.get $at) (i32.or (local.get $old) (i32.shl (i32.const 1) (i32.and (local.get $q) (i32.const 7)))))
        (local.set $q (i32.and (i32.add (local.get $q) (local.get $step)) (i32.const 511)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $step (i32.and (i32.add (i32.add (local.get $step) (local.get $e)) (i32.mul (local.get $growth) (local.get $i))) (i32.const 511)))
        (br $probe)))
    (if (local.get $set)
      (then
        (i32.store8 (i32.add (i32.load offset=24 (local.get $f)) (i32.div_u (local.get $base) (i32.load offset=28 (local.get $f)))) (i32.const 1))
        (i32.store offset=36 (local.get $f) (i32.add (i32.load offset=36 (local.get $f)) (local.get $set)))))
    (local.get $set))

  (func $hasBlocked (param $f i32) (param $h i64) (result i32)
    (local $hi i32) (local $growth i32) (local $base i32) (local $e i32) (local $q i32) (local $step i32)
    (local $i i32) (local $k i32)
    (local.set $hi (i32.wrap_i64 (i64.shr_u (local.get $h) (i64.const 32))))
    (local.set $k (i32.load offset=8 (local.get $f)))
    (local.set $growth (i32.load offset=16 (local.get $f)))
    (local.set $base (i32.add (i32.load offset=20 (local.get $f)) (i32.shl (i32.rem_u (i32.wrap_i64 (local.get $h)) (i32.load offset=40 (local.get $f))) (i32.const 6))))
    (local.set $e (i32.mul (i32.and (i32.shr_u (local.get $hi) (i32.const 18)) (i32.const 511)) (local.get $growth)))
    (local.set $q (i32.and (local.get $hi) (i32.const 511)))
    (local.set $step (i32.or (i32.and (i32.shr_u (local.get $hi) (i32.const 9)) (i32.const 511)) (i32.sub (i32.const 1) (local.get $growth))))
    (block $done
      (loop $probe
        (br_if $done (i32.ge_u (local.get $i) (local.get $k)))
        (if (i32.eqz
              (i32.and
                (i32.load8_u (i32.add (local.get $base) (i32.shr_u (local.get $q) (i32.const 3))))
                (i32.shl (i32.const 1) (i32.and (local.get $q) (i32.const 7)))))
          (then (return (i32.const 0))))
        (local.set $q (i32.and (i32.add (local.get $q) (local.get $step)) (i32.const 511)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (local.set $step (i32.and (i32.add (i32.add (local.get $step) (local.get $e)) (i32.mul (local.get $growth) (local.get $i))) (i32.const 511)))
        (br $probe)))
    (i32.const 1))

  ;; 1 when every filter of slice $j holds its hash of the URL whose words start at $row.
  (func $sliceHolds (param $plan i32) (param $j i32) (param $row i32) (result i32)
    (local $f i32) (local $end i32)
    (local.set $f (i32.add (i32.add (local.get $plan) (i32.const 256))
      (i32.mul (i32.load offset=8 (i32.add (local.get $plan) (i32.shl (local.get $j) (i32.const 3)))) (i32.const 48))))
    (local.set $end (i32.add (local.get $f)
      (i32.mul (i32.load offset=12 (i32.add (local.get $plan) (i32.shl (local.get $j) (i32.const 3)))) (i32.const 48))))
    (block $done
      (loop $filter
        (br_if $done (i32.ge_u (local.get $f) (local.get $end)))
        (if (i32.eqz (call $has (local.get $f) (i64.load (i32.add (local.get $row) (i32.load offset=32 (local.get $f))))))
          (then (return (i32.const 0))))
        (local.set $f (i32.add (local.get $f) (i32.const 48)))
        (br $filter)))
    (i32.const 1))

  (func (export "decide") (param $plan i32) (param $words i32) (param $strideBytes i32) (param $from i32) (param $to i32) (param $room i32) (param $flags i32) (result i32)
    (local $i i32) (local $fresh i32) (local $row i32) (local $j i32) (local $older i32) (local $seen i32)
    (local $f i32) (local $end i32) (local $absent i32)
    (local.set $older (i32.sub (i32.load (local.get $plan)) (i32.const 1)))
    (local.set $f (i32.add (i32.add (local.get $plan) (i32.const 256))
      (i32.mul (i32.load offset=8 (i32.add (local.get $plan) (i32.shl (local.get $older) (i32.const 3)))) (i32.const 48))))
    (local.set $end (i32.add (local.get $f)
      (i32.mul (i32.load offset=12 (i32.add (local.get $plan) (i32.shl (local.get $older) (i32.const 3)))) (i32.const 48))))
    (local.set $i (local.get $from))
    (block $done
      (loop $url
        (br_if $done (i32.ge_u (local.get $i) (local.get $to)))
        (br_if $done (i32.ge_u (local.get $fresh) (local.get $room)))
        (local.set $row (i32.add (local.get $words) (i32.mul (local.get $i) (local.get $strideBytes))))
        (local.set $seen (i32.const 0))
        (local.set $j (i32.const 0))
        (block $older_done
          (loop $slice
            (br_if $older_done (i32.or (local.get $seen) (i32.ge_u (local.get $j) (local.get $older))))
            (local.set $seen (call $sliceHolds (local.get $plan) (local.get $j) (local.get $row)))
            (local.set $j (i32.add (local.get $j) (i32.const 1)))
            (br $slice)))
        (local.set $absent (i32.const 0))
        (if (i32.eqz (local.get $seen))
          (then
            (local.set $j (local.get $f))
            (block $newest_done
              (loop $filter
                (br_if $newest_done (i32.ge_u (local.get $j) (local.get $end)))
                (if (call $add (local.get $j) (i64.load (i32.add (local.get $row) (i32.load offset=32 (local.get $j)))))
                  (then (local.set $absent (i32.const 1))))
                (local.set $j (i32.add (local.get $j) (i32.const 48)))
                (br $filter)))))
        (i32.store8 (i32.add (local.get $flags) (local.get $i)) (local.get $absent))
        (local.set $fresh (i32.add (local.get $fresh) (local.get $absent)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $url)))
    (global.set $fresh (local.get $fresh))
    (i32.sub (local.get $i) (local.get $from)))

  (func (export "fresh") (result i32)
    (global.get $fresh)))
