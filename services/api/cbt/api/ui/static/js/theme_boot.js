// Applies the stored theme before the page paints (a classic script in <head>, not a module, so it runs first):
// data-theme on <html> is "light" or "dark", resolved from the choice kept by theme.js (light / dark / system).
(function () {
  var choice = "system";
  try {
    choice = localStorage.getItem("cbt.theme") || "system";
  } catch (e) { /* storage unavailable: follow the system */ }
  var isDark = choice === "dark" || (choice !== "light" && window.matchMedia("(prefers-color-scheme: dark)").matches);
  document.documentElement.dataset.theme = isDark ? "dark" : "light";
  document.documentElement.dataset.themeChoice = choice;
})();
