// The service worker: a context-menu entry "Add this page to condense" that stores the page's
// readable text; the popup indexes stored pages it has not indexed yet. (The wasm module runs in
// the popup, where top-level await is allowed; this worker needs none of it.)
import { readablePage } from './extract.js';
import { putDoc } from './store.js';

chrome.runtime.onInstalled.addListener(() => {
  chrome.contextMenus.create({ id: 'condense-add-page', title: 'Add this page to condense', contexts: ['page', 'selection'] });
});

/** Stores the readable text of a tab; the popup indexes it when it next opens. */
async function addTab(tabId) {
  const [{ result }] = await chrome.scripting.executeScript({ target: { tabId }, func: readablePage });
  if (!result?.text) return null;
  await putDoc({ id: result.url, url: result.url, title: result.title, text: result.text, added: Date.now() });
  await chrome.action.setBadgeText({ tabId, text: '+' });
  return result.url;
}
self.condenseAddTab = addTab; // what the menu does, reachable by the end-to-end tests

chrome.contextMenus.onClicked.addListener((info, tab) => {
  if (info.menuItemId !== 'condense-add-page' || !tab?.id) return;
  addTab(tab.id).catch((e) => console.warn('condense: cannot read this page:', e.message));
});
