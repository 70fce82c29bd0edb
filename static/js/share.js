// The share panel of a friend game: the link, Copy, the Web Share sheet, the QR code. Loaded
// the first time a friend game waits for its second player (see main.js).
import { copyField } from "./review.js";
import { t } from "./squares.js";

/** Wire the panel in `root`. */
export function createShare(root) {
  const input = root.querySelector("#share-link");
  const copy = root.querySelector("#share-copy");
  const native = root.querySelector("#share-native");
  const qr = root.querySelector("#share-qr");
  const feedback = root.querySelector("#share-feedback");

  native.hidden = typeof navigator.share !== "function";
  let inviter = null; // the player's name, for the share sheet's text (plain text, never markup)

  function say(text) {
    feedback.textContent = text;
  }

  copy.addEventListener("click", async () => {
    say(await copyField(input)
      ? t("Link copied — send it to your friend")
      : t("Link selected — copy it with Ctrl+C, or long-press on a phone"));
  });

  native.addEventListener("click", async () => {
    try {
      // Translators: {name} a name (or "Your friend", X, O)
      const text = inviter ? t("{name} invites you to a game of tic-tac-toe", { name: inviter })
        : t("Play tic-tac-toe with me");
      await navigator.share({ title: t("Tic-tac-toe"), text, url: input.value });
    } catch (error) {
      if (error?.name !== "AbortError") say(t("Sharing did not work — copy the link instead"));
    }
  });

  input.addEventListener("focus", () => input.select());

  return {
    /**
     * Show the panel for the game at `path` ("/g/<id>"); `reveal` scrolls it into view; `name`:
     * the inviting player's, for the share sheet.
     */
    show(path, { reveal = false, name = null } = {}) {
      inviter = name;
      const url = new URL(path, location.origin).href;
      const fresh = input.value !== url;
      if (fresh) {
        input.value = url;
        qr.src = `${path}/qr.svg`;
        say("");
      }
      root.hidden = false;
      if (fresh && reveal) {
        // On a phone the panel is below the board: bring it into view once per link.
        const calm = matchMedia("(prefers-reduced-motion: reduce)").matches;
        root.scrollIntoView({ block: "nearest", behavior: calm ? "auto" : "smooth" });
      }
    },

    hide() {
      root.hidden = true;
    },
  };
}
