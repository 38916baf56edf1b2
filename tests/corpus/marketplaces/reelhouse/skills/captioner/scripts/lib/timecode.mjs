// Timecodes for SRT (00:00:01,250) and WebVTT (00:00:01.250).

function parts(seconds) {
  const ms = Math.round(seconds * 1000);
  const h = Math.floor(ms / 3_600_000);
  const m = Math.floor((ms % 3_600_000) / 60_000);
  const s = Math.floor((ms % 60_000) / 1000);
  const pad = (n, w = 2) => String(n).padStart(w, "0");
  return [pad(h), pad(m), pad(s), pad(ms % 1000, 3)];
}

export function srtTime(seconds) {
  const [h, m, s, ms] = parts(seconds);
  return `${h}:${m}:${s},${ms}`;
}

export function vttTime(seconds) {
  const [h, m, s, ms] = parts(seconds);
  return `${h}:${m}:${s}.${ms}`;
}
