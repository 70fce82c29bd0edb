// The board: renders a server snapshot into the nine cells; clicks, taps and keys -> onPlay(cell).

const ARROWS = { ArrowUp: [-1, 0], ArrowDown: [1, 0], ArrowLeft: [0, -1], ArrowRight: [0, 1] };

/** Whether keys typed now go into a text field rather than to the page. */
function typing(target) {
  if (!(target instanceof Element)) return false;
  if (target.isContentEditable) return true;
  if (target instanceof HTMLTextAreaElement || target instanceof HTMLSelectElement) return true;
  if (target instanceof HTMLInputElement) {
    return !["radio", "checkbox", "button", "submit", "reset", "range", "color"].includes(target.type);
  }
  return false;
}

function label(cell, mark) {
  const row = Math.floor(cell / 3) + 1;
  const column = (cell % 3) + 1;
  return `row ${row}, column ${column}, ${mark || "empty"}`;
}

/** Wire the board in `grid` (nine [data-cell] buttons) and the winning-line `strike`. */
export function createBoard(grid, strike, { onPlay }) {
  const cells = Array.from(grid.querySelectorAll("[data-cell]"));

  /** Roving tabindex: exactly one cell is in the tab order, the one last focused. */
  function focusCell(index) {
    for (const cell of cells) cell.tabIndex = -1;
    cells[index].tabIndex = 0;
    cells[index].focus();
  }

  grid.addEventListener("click", (event) => {
    const cell = event.target.closest("[data-cell]");
    if (!cell || !grid.contains(cell)) return;
    const index = Number(cell.dataset.cell);
    focusCell(index);
    // aria-disabled cells still send: the server's refusal explains why.
    onPlay(index);
  });

  grid.addEventListener("keydown", (event) => {
    const cell = event.target.closest("[data-cell]");
    if (!cell || event.altKey || event.ctrlKey || event.metaKey) return;
    const index = Number(cell.dataset.cell);
    let row = Math.floor(index / 3);
    let column = index % 3;
    if (event.key in ARROWS) {
      const [down, right] = ARROWS[event.key];
      row = Math.min(2, Math.max(0, row + down));
      column = Math.min(2, Math.max(0, column + right));
    } else if (event.key === "Home") {
      column = 0;
    } else if (event.key === "End") {
      column = 2;
    } else {
      return;
    }
    event.preventDefault();
    focusCell(row * 3 + column);
  });

  // Digits 1-9 play cells 0-8 from anywhere on the page, unless a text field has the keys.
  document.addEventListener("keydown", (event) => {
    if (event.altKey || event.ctrlKey || event.metaKey || event.repeat) return;
    if (!/^[1-9]$/.test(event.key) || typing(event.target)) return;
    event.preventDefault();
    const index = Number(event.key) - 1;
    focusCell(index);
    onPlay(index);
  });

  /**
   * Show `game`. `playable`: the viewer may move now. `fresh`: the cell whose
   * mark just appeared (animated), null for none, undefined to leave as is.
   */
  function render(game, { playable, fresh }) {
    const last = game.moves.length ? game.moves[game.moves.length - 1] : null;
    const line = game.line ?? [];
    for (const cell of cells) {
      const index = Number(cell.dataset.cell);
      const mark = game.board[index] === "." ? "" : game.board[index];
      cell.dataset.mark = mark;
      cell.setAttribute("aria-label", label(index, mark));
      cell.setAttribute("aria-disabled", String(!playable || mark !== ""));
      cell.classList.toggle("is-last", index === last);
      cell.classList.toggle("is-win", line.includes(index));
      if (fresh !== undefined) cell.classList.toggle("is-new", index === fresh);
    }
    grid.dataset.status = game.status;
    grid.dataset.turn = playable ? game.turn : "";
    strike.dataset.line = line.join("");
    strike.dataset.winner = game.winner ?? "";
    grid.parentElement.dataset.winner = game.winner ?? "";
  }

  return { render };
}
