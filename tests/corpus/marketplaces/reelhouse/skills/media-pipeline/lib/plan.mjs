// Shot planning: a brief's sections split into shots.

export const ASPECTS = {
  "16:9": { width: 1920, height: 1080 },
  "9:16": { width: 1080, height: 1920 },
  "1:1": { width: 1080, height: 1080 },
};

export function planShots(brief, { aspect = "16:9", maxShot = 6 } = {}) {
  if (!Array.isArray(brief.sections) || brief.sections.length === 0) {
    throw new Error("the brief has no sections");
  }
  const shots = [];
  brief.sections.forEach((section, i) => {
    const total = Number(section.seconds);
    if (!(total > 0)) throw new Error(`section ${i + 1}: seconds must be a positive number`);
    const count = Math.ceil(total / maxShot);
    for (let k = 0; k < count; k++) {
      shots.push({
        id: `s${i + 1}.${k + 1}`,
        seconds: Math.round((total / count) * 10) / 10,
        caption: section.say ?? "",
        source: section.source ?? null,
      });
    }
  });
  return { title: brief.title ?? "untitled", aspect, size: ASPECTS[aspect], shots };
}

export function missing(plan) {
  return plan.shots.filter((s) => !s.source);
}

export function runningTime(plan) {
  return plan.shots.reduce((sum, s) => sum + s.seconds, 0);
}
