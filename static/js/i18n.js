// The page's words in the player's language. The server sends that language's catalog (only
// it, only the page's messages) in `config.words`, from the gettext catalogs in ttt/translations/
// (`make translations`); a message it lacks reads as its English msgid. Words are marked
// t("…") and tn("…", "…", n) for `pybabel extract`: plain strings, with {name} placeholders.
const element = document.getElementById("config");
const words = (element && JSON.parse(element.textContent).words) || {};

/** The page's language, BCP 47 ("pt-BR"). */
export const lang = words.lang || document.documentElement.lang || "en";
const messages = words.messages || {};
// CLDR plural category (as Intl.PluralRules names it) -> the catalog's plural form index.
const plurals = words.plurals || { one: 0, other: 1 };
const pluralRules = new Intl.PluralRules(lang);
const numbers = new Intl.NumberFormat(lang);

const utf8 = new TextEncoder();

/** A message's key in the catalog: 5 base-36 digits of the FNV-1a hash of its UTF-8 bytes (the
 * server's ttt.web.i18n.message_key), so the page is not sent its English twice. */
function key(msgid) {
  let value = 0x811c9dc5;
  for (const byte of utf8.encode(msgid)) value = Math.imul(value ^ byte, 0x01000193) >>> 0;
  let digits = "";
  for (let i = 0; i < 5; i += 1) {
    digits += (value % 36).toString(36);
    value = Math.floor(value / 36);
  }
  return digits;
}

function fill(text, params) {
  if (!params) return text;
  return text.replace(/\{(\w+)\}/g, (whole, key) => (key in params ? String(params[key]) : whole));
}

/** A number as the language writes it ("1.234", "١٢"). */
export function number(n) {
  return numbers.format(n);
}

/** The message `msgid` in the page's language, its {placeholders} filled from `params`. */
export function t(msgid, params) {
  const found = messages[key(msgid)];
  return fill(typeof found === "string" ? found : msgid, params);
}

/** The plural form for `n` ("1 draw", "2 draws"; six forms in Arabic); {n} is `n` formatted. */
export function tn(singular, plural, n, params) {
  const forms = messages[key(singular)];
  let text;
  if (Array.isArray(forms)) {
    const index = plurals[pluralRules.select(n)] ?? plurals.other ?? forms.length - 1;
    text = forms[index] ?? forms[forms.length - 1];
  } else {
    text = n === 1 ? singular : plural;
  }
  return fill(text, { n: number(n), ...params });
}
