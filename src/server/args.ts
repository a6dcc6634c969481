import type { Request } from './resp-parser.js';
import { ReplyError } from './context.js';

/** Argument i as UTF-8 text. */
export function argText(request: Request, i: number): string {
  return request.buf.toString('utf8', request.offsets[2 * i], request.offsets[2 * i + 1]);
}

/** Argument i upper-cased (command names and keywords are case-insensitive). */
export function argKeyword(request: Request, i: number): string {
  return argText(request, i).toUpperCase();
}

export function argBytes(request: Request, i: number): Buffer {
  return request.buf.subarray(request.offsets[2 * i], request.offsets[2 * i + 1]);
}

export function argLength(request: Request, i: number): number {
  return request.offsets[2 * i + 1]! - request.offsets[2 * i]!;
}

/** Arguments from..argc-1 as strings (reads: the library's `has` takes strings). */
export function argTexts(request: Request, from: number): string[] {
  const texts = new Array<string>(request.argc - from);
  for (let i = from; i < request.argc; i++) texts[i - from] = argText(request, i);
  return texts;
}

/** A whole number (digits, optional sign); `error` is the reply when it is not one. */
export function argInteger(request: Request, i: number, error: string): number {
  const text = argText(request, i);
  if (!/^[+-]?[0-9]{1,15}$/.test(text)) throw new ReplyError(error);
  return Number(text);
}

/** A finite decimal number (as Redis's strtod accepts: 0.01, 1e-3); `error` is the reply when it is not one. */
export function argNumber(request: Request, i: number, error: string): number {
  const text = argText(request, i);
  const value = Number(text);
  if (text.trim() === '' || !Number.isFinite(value)) throw new ReplyError(error);
  return value;
}

export function wrongArity(name: string): ReplyError {
  return new ReplyError(`ERR wrong number of arguments for '${name.toLowerCase()}' command`);
}
