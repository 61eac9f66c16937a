// The look of the page an app is told of (see `apps.js`): its theme and MCP Apps' style variables.

// The workbench's colours and fonts as MCP Apps' standard style variables, so an app can look like the page.
const STYLE_VARIABLES = {
  "--color-background-primary": "--panel",
  "--color-background-secondary": "--panel-2",
  "--color-background-tertiary": "--bg",
  "--color-text-primary": "--text",
  "--color-text-secondary": "--muted",
  "--color-text-danger": "--danger",
  "--color-text-success": "--ok",
  "--color-text-warning": "--warn",
  "--color-border-primary": "--border",
  "--color-ring-primary": "--focus",
  "--font-sans": "--font",
  "--font-mono": "--mono",
  "--border-radius-md": "--radius",
};

export function hostStyles() {
  const style = getComputedStyle(document.documentElement);
  const variables = {};
  for (const [name, own] of Object.entries(STYLE_VARIABLES)) {
    const value = style.getPropertyValue(own).trim();
    if (value) variables[name] = value;
  }
  return { variables };
}

export function currentTheme() {
  const chosen = document.documentElement.dataset.theme;
  if (chosen === "light" || chosen === "dark") return chosen;
  return matchMedia("(prefers-color-scheme: dark)").matches ? "dark" : "light";
}
