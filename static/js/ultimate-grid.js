// The squares of the 9x9 board, built once: nine small boards of nine cells, each cell knowing
// its place on the 9x9 grid (for the arrow keys). Drawing only: no rule of the game.
import { rowColumn, ultimateCell } from "./squares.js";

const SVG = "http://www.w3.org/2000/svg";

/**
 * An X or an O, drawn as the classic board draws it (`kind`: "x" or "o"); `big`: across most of
 * a small board (a narrower view of the same drawing, so it grows without overflowing).
 */
function markSvg(kind, big = false) {
  const svg = document.createElementNS(SVG, "svg");
  svg.setAttribute("class", `mark mark-${kind}`);
  svg.setAttribute("viewBox", big ? "20 20 60 60" : "0 0 100 100");
  svg.setAttribute("aria-hidden", "true");
  svg.setAttribute("focusable", "false");
  const shape = document.createElementNS(SVG, kind === "x" ? "path" : "circle");
  if (kind === "x") {
    shape.setAttribute("d", "M27 27L73 73M73 27L27 73");
  } else {
    shape.setAttribute("cx", "50");
    shape.setAttribute("cy", "50");
    shape.setAttribute("r", "26");
  }
  shape.setAttribute("pathLength", "1");
  svg.append(shape);
  return svg;
}

/** One square of small board `b`: a button to play on, or a plain square to look at. */
function square(b, c, readOnly) {
  const cell = document.createElement(readOnly ? "span" : "button");
  cell.className = "ucell";
  cell.dataset.ucell = String(ultimateCell(b, c));
  cell.dataset.mark = "";
  const [bigRow, bigColumn] = rowColumn(b);
  const [row, column] = rowColumn(c);
  cell.dataset.row = String(3 * bigRow + row);
  cell.dataset.column = String(3 * bigColumn + column);
  if (readOnly) {
    cell.setAttribute("aria-hidden", "true");
  } else {
    cell.type = "button";
    cell.tabIndex = -1;
    cell.setAttribute("aria-disabled", "true");
  }
  const text = document.createElement("span");
  text.className = "ueval";
  text.setAttribute("aria-hidden", "true");
  cell.append(markSvg("x"), markSvg("o"), text);
  return cell;
}

/**
 * Build the nine small boards in `grid`. Returns {smalls, cells, at(row, column)}: cells in
 * the protocol's order, and the cell at a place of the 9x9 grid.
 */
export function build(grid, readOnly) {
  const smalls = [];
  const cells = [];
  const rows = Array.from({ length: 9 }, () => []);
  for (let b = 0; b < 9; b += 1) {
    const small = document.createElement("div");
    small.className = "usmall";
    small.dataset.uboard = String(b);
    small.setAttribute("role", readOnly ? "img" : "group");
    for (let c = 0; c < 9; c += 1) {
      const cell = square(b, c, readOnly);
      rows[Number(cell.dataset.row)][Number(cell.dataset.column)] = cell;
      small.append(cell);
      cells.push(cell);
    }
    const big = document.createElement("span");
    big.className = "ubig";
    big.setAttribute("aria-hidden", "true");
    big.append(markSvg("x", true), markSvg("o", true));
    small.append(big);
    grid.append(small);
    smalls.push(small);
  }
  const centre = rows[4][4];
  if (!readOnly) centre.tabIndex = 0;
  return { smalls, cells, centre, at: (row, column) => rows[row][column] };
}
