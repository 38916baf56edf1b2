// Group timed words into captions of at most two lines.

export function segment(words, { maxChars = 32, maxGap = 0.7, minDuration = 0.8 } = {}) {
  const captions = [];
  let lines = [""];
  let start = null;
  let end = null;
  const flush = () => {
    if (start === null) return;
    captions.push({ start, end: Math.max(end, start + minDuration), text: lines.join("\n") });
    lines = [""];
    start = null;
  };
  for (const { word, start: ws, end: we } of words) {
    const w = word.trim();
    if (!w) continue;
    if (start !== null && ws - end > maxGap) flush();
    const last = lines.length - 1;
    const next = lines[last] ? `${lines[last]} ${w}` : w;
    if (next.length > maxChars && lines[last]) {
      if (lines.length === 2) {
        flush();
        lines[0] = w;
      } else {
        lines.push(w);
      }
    } else {
      lines[last] = next;
    }
    if (start === null) start = ws;
    end = we;
  }
  flush();
  return captions;
}
