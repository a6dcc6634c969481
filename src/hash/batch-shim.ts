/** The compiled batch-shim.wat (wat2wasm 1.0.32, 148 bytes). See the .wat for what it does. */
export const BATCH_SHIM_WASM: Uint8Array = Buffer.from(
  'AGFzbQEAAAABDwJgA39/fgF+YAR/f35/AAIeAgZ4eGhhc2gDbWVtAgABBnh4aGFzaAV4eGg2NAAAAwIBAQcNAQloYXNoQmF0Y2gAAQpGAUQBA38CQANAIAQgAU8NASAAIARBAnRqIQYgBigCACEFIAMgBEEDdGogBSAGKAIEIAVrIAIQADcDACAEQQFqIQQMAAsLCw==',
  'base64',
);
