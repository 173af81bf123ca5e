// The console's accessibility check, evaluated in each page by
// chromium_test.go. It returns the problems found, one a line ("" if none).
(() => {
  const problems = [];
  const say = (s) => problems.push(s);
  const visible = (el) => {
    const r = el.getBoundingClientRect();
    const s = getComputedStyle(el);
    return r.width > 1 && r.height > 1 && s.visibility !== "hidden" && s.display !== "none";
  };
  const describe = (el) => el.tagName.toLowerCase() + (el.id ? "#" + el.id : "") + (el.className ? "." + String(el.className).split(" ").join(".") : "");

  // The document's language.
  if (!document.documentElement.lang) say("<html> has no lang");
  if (!document.title.trim()) say("the page has no title");

  // Landmarks: one banner, one navigation (except on a refusal), one main.
  const count = (sel) => document.querySelectorAll(sel).length;
  if (count("body > header") !== 1) say("want one <header> banner, have " + count("body > header"));
  if (count("main") !== 1) say("want one <main>, have " + count("main"));
  if (count("nav") > 1) say("more than one <nav>");
  for (const nav of document.querySelectorAll("nav")) {
    if (!nav.getAttribute("aria-label")) say("a <nav> has no aria-label");
  }
  for (const sec of document.querySelectorAll("section[aria-labelledby]")) {
    if (!document.getElementById(sec.getAttribute("aria-labelledby"))) say("a section is labelled by a missing id " + sec.getAttribute("aria-labelledby"));
  }

  // Every form control has a label.
  for (const el of document.querySelectorAll("input, select, textarea")) {
    if (el.type === "hidden") continue;
    const named = (el.labels && el.labels.length > 0 && [...el.labels].some((l) => l.textContent.trim())) || el.getAttribute("aria-label");
    if (!named) say("form control " + describe(el) + " has no label");
  }
  // Every image has alt text; every link and button a name.
  for (const img of document.querySelectorAll("img")) {
    if (!img.hasAttribute("alt")) say("image " + img.src + " has no alt");
  }
  for (const el of document.querySelectorAll("a[href], button")) {
    if (!el.textContent.trim() && !el.getAttribute("aria-label")) say(describe(el) + " has no accessible name");
  }
  // Ids are unique.
  const ids = new Map();
  for (const el of document.querySelectorAll("[id]")) ids.set(el.id, (ids.get(el.id) || 0) + 1);
  for (const [id, n] of ids) if (n > 1) say("id " + id + " is used " + n + " times");

  // Headings start at h1, there is one h1, and no level is skipped.
  const hs = [...document.querySelectorAll("h1, h2, h3, h4, h5, h6")].map((h) => Number(h.tagName[1]));
  if (hs[0] !== 1) say("the first heading is h" + hs[0]);
  if (hs.filter((l) => l === 1).length !== 1) say("want one h1");
  for (let i = 1; i < hs.length; i++) {
    if (hs[i] > hs[i - 1] + 1) say("heading h" + hs[i] + " follows h" + hs[i - 1]);
  }

  // Contrast of every visible text against what it is drawn on.
  const rgba = (s) => {
    const m = s.match(/rgba?\(([^)]+)\)/);
    if (!m) return null;
    const p = m[1].split(",").map((x) => parseFloat(x));
    return { r: p[0], g: p[1], b: p[2], a: p.length > 3 ? p[3] : 1 };
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
    return 0.2126 * f(c.r) + 0.7152 * f(c.g) + 0.0722 * f(c.b);
  };
  const background = (el) => {
    for (let e = el; e; e = e.parentElement) {
      const c = rgba(getComputedStyle(e).backgroundColor);
      if (c && c.a > 0) return c;
    }
    return { r: 255, g: 255, b: 255, a: 1 };
  };
  const checked = new Set();
  const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const el = n.parentElement;
    if (!n.textContent.trim() || checked.has(el) || !visible(el) || el.closest(".vh")) continue;
    checked.add(el);
    const s = getComputedStyle(el);
    const fg = rgba(s.color), bg = background(el);
    const ratio = (Math.max(lum(fg), lum(bg)) + 0.05) / (Math.min(lum(fg), lum(bg)) + 0.05);
    const size = parseFloat(s.fontSize), bold = Number(s.fontWeight) >= 700;
    const need = size >= 24 || (bold && size >= 18.66) ? 3 : 4.5;
    if (ratio < need) say("contrast " + ratio.toFixed(2) + ":1 < " + need + " for " + describe(el) + " \"" + n.textContent.trim().slice(0, 30) + "\"");
  }
  if (checked.size < 5) say("only " + checked.size + " texts checked for contrast");
  return problems.join("\n");
})()
