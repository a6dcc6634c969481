/** The one peer without its own types (jasondavies' bloomfilter, 0.0.18). */
declare module 'bloomfilter' {
  export class BloomFilter {
    constructor(m: number, k: number);
    add(value: string): void;
    test(value: string): boolean;
  }
}
