;; Batch hashing shim for xxhash-wasm: one call hashes a whole batch of keys with xxhash-wasm's own
;; xxh64 export, so JavaScript handles no BigInt and allocates nothing per key.
;;
;; hashBatch(offsets, count, seed, out): keys are bytes in the shared memory; key i spans
;; [offsets[i], offsets[i + 1]) (u32 offsets); its xxh64 with `seed` is stored as a little-endian
;; u64 at out + 8 * i.
;;
;; hashRanges(ranges, count, seed, out): the same for keys anywhere in the memory: key i spans
;; [ranges[2i], ranges[2i + 1]) (u32 pairs), so keys may keep separators between them (the lines of
;; an input block, hashed where they lie).
;;
;; Regenerate src/hash/batch-shim.ts after editing: wat2wasm src/hash/batch-shim.wat -o shim.wasm && base64 -w0 shim.wasm
(module
  (import "xxhash" "mem" (memory 1))
  (import "xxhash" "xxh64" (func $xxh64 (param i32 i32 i64) (result i64)))
  (func (export "hashBatch") (param $offsets i32) (param $count i32) (param $seed i64) (param $out i32)
    (local $i i32) (local $start i32) (local $at i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        (local.set $at (i32.add (local.get $offsets) (i32.shl (local.get $i) (i32.const 2))))
        (local.set $start (i32.load (local.get $at)))
        (i64.store
          (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 3)))
          (call $xxh64
            (local.get $start)
            (i32.sub (i32.load offset=4 (local.get $at)) (local.get $start))
            (local.get $seed)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next))))
  (func (export "hashRanges") (param $ranges i32) (param $count i32) (param $seed i64) (param $out i32)
    (local $i i32) (local $start i32) (local $at i32)
    (block $done
      (loop $next
        (br_if $done (i32.ge_u (local.get $i) (local.get $count)))
        (local.set $at (i32.add (local.get $ranges) (i32.shl (local.get $i) (i32.const 3))))
        (local.set $start (i32.load (local.get $at)))
        (i64.store
          (i32.add (local.get $out) (i32.shl (local.get $i) (i32.const 3)))
          (call $xxh64
            (local.get $start)
            (i32.sub (i32.load offset=4 (local.get $at)) (local.get $start))
            (local.get $seed)))
        (local.set $i (i32.add (local.get $i) (i32.const 1)))
        (br $next)))))
