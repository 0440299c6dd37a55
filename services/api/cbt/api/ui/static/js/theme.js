// The colour theme: light, dark or the system's (prefers-color-scheme), chosen in the header and kept in
// localStorage. theme_boot.js applies it before the first paint; this module keeps it in step with the header's
// control and with the system setting. resolveTheme and parseChoice are pure (unit-tested with node).

export const THEME_KEY = "cbt.theme";
export const CHOICES = ["system", "light", "dark"];

export function parseChoice(text) {
  return CHOICES.includes(text) ? text : "system";
}

/** "light" or "dark": the choice, or the system's setting when the choice is "system". */
export function resolveTheme(choice, isSystemDark) {
  const parsed = parseChoice(choice);
  if (parsed === "system") return isSystemDark ? "dark" : "light";
  return parsed;
}

function stored() {
  try {
    return parseChoice(localStorage.getItem(THEME_KEY));
  } catch {
    return "system";
  }
}

/** Binds the header's theme control (a <select>) and follows the system setting while the choice is "system". */
export function initTheme(select) {
  const media = window.matchMedia("(prefers-color-scheme: dark)");
  const apply = (choice) => {
    document.documentElement.dataset.theme = resolveTheme(choice, media.matches);
    document.documentElement.dataset.themeChoice = choice;
  };
  const choice = stored();
  apply(choice);
  if (select) {
    select.value = choice;
    select.addEventListener("change", () => {
      const picked = parseChoice(select.value);
      try {
        if (picked === "system") localStorage.removeItem(THEME_KEY);
        else localStorage.setItem(THEME_KEY, picked);
      } catch { /* storage unavailable: the choice lasts for this page */ }
      apply(picked);
    });
  }
  media.addEventListener("change", () => apply(stored()));
}
