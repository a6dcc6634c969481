/** The parts of the WebAssembly JS API that the hash layer uses (Node provides it; @types/node 20 does not declare it). */
declare namespace WebAssembly {
  interface Memory {
    readonly buffer: ArrayBuffer;
    grow(deltaPages: number): number;
  }
  interface Instance {
    readonly exports: Record<string, unknown>;
  }
  function instantiate(bytes: Uint8Array, imports?: Record<string, Record<string, unknown>>): Promise<{ instance: Instance }>;
}
