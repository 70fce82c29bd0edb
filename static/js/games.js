// "Your games": the player's live friend games, from the server's `games` answer (PROTOCOL v4),
// each a link: the opponent's name, whose turn, the time left. Names are set as text, never as
// markup.
import { clockWords, t } from "./squares.js";

/** One game of the list in words: ["Ben", "your turn · 0:42"]. */
export function gameWords(line) {
  const who = line.opponent ?? (line.seated ? t("Your friend") : t("Nobody yet"));
  let turn = line.your_turn ? t("your turn") : t("their turn");
  if (!line.seated) turn = t("waiting for them to join");
  else if (!line.online && !line.your_turn) turn = t("their turn · away");
  const board = line.variant === "ultimate" ? "9×9 · " : "";
  const left = line.clock && line.time_left !== null && line.time_left !== undefined
    ? ` · ${clockWords(line.time_left)}` : "";
  return [who, `${board}${turn}${left}`];
}

/**
 * Wire the list (`section` holds a `list` <ul>). `call(event, payload)`: the transport.
 * refresh(currentId) asks the server again; the time left counts down in between.
 */
export function createGames({ section, list }, { call }) {
  let lines = [];
  let fetched = 0;
  let current = null;
  let timer = 0;

  function draw() {
    const elapsed = (performance.now() - fetched) / 1000;
    list.replaceChildren(...lines.map((line) => {
      const item = document.createElement("li");
      const link = document.createElement("a");
      link.className = "my-game";
      link.href = line.link;
      if (line.your_turn) link.classList.add("is-your-turn");
      const shown = { ...line };
      // The side on move's time runs: counted down here between two answers.
      if (shown.time_left !== null && shown.time_left !== undefined && shown.turn
          && shown.seated !== false) {
        shown.time_left = Math.max(0, shown.time_left - elapsed);
      }
      const [who, what] = gameWords(shown);
      const name = document.createElement("span");
      name.className = "my-game-name";
      name.textContent = who;
      const state = document.createElement("span");
      state.className = "my-game-state";
      state.textContent = what;
      link.append(name, state);
      if (line.id === current) {
        link.setAttribute("aria-current", "page");
        state.textContent += t(" · on screen");
      }
      item.append(link);
      return item;
    }));
    // Only the game on screen: nothing to go back to.
    section.hidden = lines.every((line) => line.id === current);
  }

  async function refresh(currentId) {
    current = currentId ?? current;
    const answer = await call("games", {});
    if (!answer.ok || !Array.isArray(answer.games)) return; // an older server: no list
    lines = answer.games;
    fetched = performance.now();
    draw();
    clearInterval(timer);
    timer = lines.some((line) => line.clock) ? setInterval(draw, 1000) : 0;
  }

  return { refresh };
}
