export const GROUPS: Record<string, string> = {
  feat: "Features",
  fix: "Bug fixes",
  perf: "Performance",
};
export const OTHER = "Other";
