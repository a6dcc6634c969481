/** The parts of the WebAssembly JS API that the hash layer uses (Node provides it; @types/node 20 does not declare it). */
declare namespace WebAssembly {
  interface Memory {
    readonly buffer: ArrayBuffer;
    grow(deltaPages: number): number;
  }
  var Memory: { new (descriptor: { initial: number; maximum?: number; shared?: boolean }): Memory };
  // biome-ignore lint/suspicious/noEmptyInterface: an opaque compiled module, as the DOM typings declare it.
  interface Module {}
  var Module: { new (bytes: Uint8Array): Module };
  interface Instance {
    readonly exports: Record<string, unknown>;
  }
  var Instance: { new (module: Module, imports?: Record<string, Record<string, unknown>>): Instance };
  function instantiate(
    bytes: Uint8Array,
    imports?: Record<string, Record<string, unknown>>,
  ): Promise<{ instance: Instance }>;
}
