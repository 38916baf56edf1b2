// The channel palette and WCAG contrast.

export type Color = { name: string; hex: string };

export const PALETTE: Color[] = [
  { name: "crust", hex: "#3b2314" },
  { name: "flour", hex: "#f7f1e3" },
  { name: "starter", hex: "#e8b04b" },
  { name: "oven", hex: "#c2452d" },
  { name: "ink", hex: "#111111" },
];

function luminance(hex: string): number {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255).map((c) =>
    c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4,
  );
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

export function contrast(a: string, b: string): number {
  const [hi, lo] = [luminance(a), luminance(b)].sort((x, y) => y - x);
  return (hi + 0.05) / (lo + 0.05);
}

export function bestPair(min = 4.5): [Color, Color] {
  let best: [Color, Color] = [PALETTE[0], PALETTE[1]];
  let score = 0;
  for (const bg of PALETTE) {
    for (const fg of PALETTE) {
      const c = contrast(bg.hex, fg.hex);
      if (bg !== fg && c >= min && bg.name !== "ink" && c > score) {
        best = [bg, fg];
        score = c;
      }
    }
  }
  return best;
}
