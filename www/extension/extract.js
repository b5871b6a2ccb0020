// The readable text of a page, as markdown-ish text (headings become `#` lines, so condense
// chunks the page by its sections). Injected with chrome.scripting.executeScript({func}):
// it must stay self-contained (no closure, no import).
export function readablePage() {
  const SKIP = new Set(['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'SVG', 'CANVAS', 'IFRAME', 'NAV', 'FOOTER', 'ASIDE', 'FORM', 'BUTTON', 'SELECT', 'INPUT', 'TEXTAREA']);
  const BLOCK = new Set(['P', 'DIV', 'SECTION', 'ARTICLE', 'MAIN', 'HEADER', 'UL', 'OL', 'LI', 'TABLE', 'TR', 'BLOCKQUOTE', 'DL', 'DT', 'DD', 'FIGURE', 'FIGCAPTION', 'BR', 'HR', 'DETAILS', 'SUMMARY']);
  const root = document.querySelector('article, main, [role=main]') || document.body;
  const out = [];
  const walk = (node) => {
    if (node.nodeType === Node.TEXT_NODE) {
      out.push(node.textContent.replace(/\s+/g, ' '));
      return;
    }
    if (node.nodeType !== Node.ELEMENT_NODE) return;
    const tag = node.tagName.toUpperCase();
    if (SKIP.has(tag) || node.hidden || node.getAttribute('aria-hidden') === 'true') return;
    const style = getComputedStyle(node);
    if (style.display === 'none' || style.visibility === 'hidden') return;
    const h = /^H([1-6])$/.exec(tag);
    if (h) {
      out.push(`\n\n${'#'.repeat(Number(h[1]))} ${node.textContent.replace(/\s+/g, ' ').trim()}\n\n`);
      return;
    }
    if (tag === 'PRE') {
      out.push(`\n\n\`\`\`\n${node.textContent.replace(/\n+$/, '')}\n\`\`\`\n\n`);
      return;
    }
    const block = BLOCK.has(tag);
    if (block) out.push(tag === 'LI' ? '\n- ' : '\n\n');
    for (const child of node.childNodes) walk(child);
    if (block) out.push('\n');
    else if (tag === 'TD' || tag === 'TH') out.push(' | ');
  };
  walk(root);
  const text = out.join('')
    .replace(/[ \t]+\n/g, '\n')
    .replace(/\n[ \t]+/g, '\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  const url = location.href.replace(/#.*$/, '');
  return { url, title: document.title.trim() || url, text: text.slice(0, 2_000_000) };
}
