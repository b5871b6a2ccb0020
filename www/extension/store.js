// What the extension keeps in chrome.storage.local: the pages the user added (their text) and
// the serialized index over them (so opening the popup does not re-embed every page).
//   docs:  { [url]: {id, url, title, text, added} }
//   index: {base64, ids: [url…], embedder: identity}  (absent until the popup builds one)
const area = () => chrome.storage.local;

export async function docs() {
  return (await area().get('docs')).docs ?? {};
}
export async function putDoc(doc) {
  const all = await docs();
  all[doc.id] = doc;
  await area().set({ docs: all });
  return all;
}
export async function removeDoc(id) {
  const all = await docs();
  delete all[id];
  await area().set({ docs: all });
  return all;
}
export async function savedIndex() {
  const { index } = await area().get('index');
  if (!index) return null;
  return { bytes: fromBase64(index.base64), ids: index.ids, embedder: index.embedder };
}
export async function saveIndex(bytes, ids, embedder) {
  await area().set({ index: { base64: toBase64(bytes), ids, embedder } });
}

function toBase64(bytes) {
  let s = '';
  for (let i = 0; i < bytes.length; i += 0x8000) s += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(s);
}
function fromBase64(b64) {
  const s = atob(b64);
  const bytes = new Uint8Array(s.length);
  for (let i = 0; i < s.length; i++) bytes[i] = s.charCodeAt(i);
  return bytes;
}
