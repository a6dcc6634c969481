/** Crawl-like URLs, generated (soak runs never read ../shared). */
export function generatedUrls(count: number): string[] {
  return Array.from(
    { length: count },
    (_, i) =>
      `https://site${i % 97}.example/section/${Math.floor(i / 97)}/page-${i}.html?ref=${(i * 2654435761) % 1000}`,
  );
}
