// Copies what tsc does not emit into dist/: the Redis function library's Lua sources, which
// src/store/redis/library.ts reads beside its compiled module.
import { cpSync } from 'node:fs';

cpSync(new URL('../src/store/redis/lua/', import.meta.url), new URL('../dist/src/store/redis/lua/', import.meta.url), { recursive: true });
