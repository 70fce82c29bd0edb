// The Copy button of the shown-once token page: the token to the clipboard, said in words.
// Without a clipboard (an http page that is not localhost), the text is selected instead.
import { t } from "./squares.js";

const button = document.getElementById("bot-token-copy");
const field = document.getElementById(button?.dataset.copy ?? "");
const said = document.getElementById("bot-token-copied");

if (button && field) {
  button.hidden = false;
  button.addEventListener("click", async () => {
    field.focus();
    field.select();
    try {
      await navigator.clipboard.writeText(field.value);
      said.textContent = t("Copied. Paste it into your token file.");
    } catch {
      said.textContent = t("Selected: press Ctrl-C (or ⌘-C) to copy it.");
    }
  });
}
