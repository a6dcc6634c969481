/** Batch `batch` of the journal tests' power-cut child (journal-child.ts): 50 URLs. */
export function powerUrls(batch: number): string[] {
  return Array.from({ length: 50 }, (_, i) => `https://power.example/${batch}/${i}`);
}
