// Writes user_facts_dev.jsonl: support conversations in which a customer states facts about
// themselves across long messages (see README.md beside this file for how and why).
//
//   node bench/data/user_facts/generate.mjs [--count 40] [--seed 7] > bench/data/user_facts/user_facts_dev.jsonl
//
// Deterministic: the same seed gives the same file. Every fact is written from the word lists
// below (made up for this set); none is taken from a benchmark.
const arg = (name, def) => (process.argv.includes(name) ? process.argv[process.argv.indexOf(name) + 1] : def);
const count = Number(arg('--count', '40'));
let state = Number(arg('--seed', '7')) >>> 0 || 1;

// xorshift32: small, deterministic, good enough to shuffle templates.
function rand() {
  state ^= state << 13; state >>>= 0;
  state ^= state >>> 17;
  state ^= state << 5; state >>>= 0;
  return state / 4294967296;
}
const pick = (xs) => xs[Math.floor(rand() * xs.length)];
const shuffle = (xs) => {
  const a = [...xs];
  for (let i = a.length - 1; i > 0; i--) {
    const j = Math.floor(rand() * (i + 1));
    [a[i], a[j]] = [a[j], a[i]];
  }
  return a;
};

const FIRST = ['Dana', 'Marek', 'Ines', 'Tobias', 'Priya', 'Oluwaseun', 'Hélène', 'Kofi', 'Saoirse', 'Mateo',
  'Yuki', 'Anouk', 'Bram', 'Leilani', 'Radu', 'Ximena', 'Torvald', 'Nadia', 'Emeka', 'Quinn', 'Zofia', 'Caius',
  'Ilse', 'Rohan', 'Maren', 'Teodor', 'Aiyana', 'Florin', 'Solveig', 'Darius'];
const LAST = ['Okafor', 'Lindqvist', 'Moreau', 'Castellanos', 'Brennan', 'Haddad', 'Novak', 'Achterberg',
  'Pereira', 'Whitlock', 'Sato', 'Kowalczyk', 'Delacroix', 'Mbeki', 'Fairbairn'];
const PLACES = ['Porto', 'Leeds', 'Tucson', 'Ghent', 'Bergen', 'Halifax', 'Gdańsk', 'Valparaíso', 'Nagoya',
  'Cork', 'Boise', 'Ljubljana', 'Dunedin', 'Aarhus', 'Savannah', 'Tampere', 'Mombasa', 'Bilbao', 'Winnipeg'];
const PRODUCTS = [
  { name: 'espresso machine', parts: ['steam wand', 'drip tray', 'portafilter handle', 'water tank lid'] },
  { name: 'standing desk', parts: ['left leg motor', 'control panel', 'cable tray', 'crossbar bracket'] },
  { name: 'e-bike', parts: ['rear derailleur', 'battery latch', 'kickstand spring', 'brake lever'] },
  { name: 'dishwasher', parts: ['upper rack wheel', 'door latch', 'spray arm', 'detergent flap'] },
  { name: 'tablet', parts: ['charging port', 'volume rocker', 'front camera', 'screen corner'] },
  { name: 'wardrobe', parts: ['left hinge', 'sliding rail', 'mirror panel', 'drawer runner'] },
  { name: 'air purifier', parts: ['filter cover', 'fan grille', 'power button', 'sensor window'] },
  { name: 'stroller', parts: ['front wheel', 'canopy clip', 'brake pedal', 'fold latch'] },
  { name: 'sofa', parts: ['armrest seam', 'cushion zipper', 'back frame', 'recliner lever'] },
  { name: 'robot vacuum', parts: ['side brush', 'dust bin hatch', 'bumper', 'docking contacts'] },
];
const DAMAGE = ['dented', 'scratched', 'cracked', 'warped', 'chipped', 'loose', 'bent', 'stained'];
const NUMBER_WORDS = ['two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'twelve'];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October',
  'November', 'December'];
const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const PREFERENCES = [
  ['I usually take', 'oat milk', 'in my coffee when I test the machine'],
  ['I always go for the', 'matte black finish', 'because the glossy ones show fingerprints'],
  ['I prefer to be contacted by', 'text message', 'rather than phone calls during work hours'],
  ['I strongly prefer', 'morning deliveries', 'since nobody is home after lunch'],
  ['My favourite colour for these things is', 'sage green', 'so I would like the replacement in that'],
  ['I am allergic to', 'latex', 'so please make sure the technician knows'],
  ['I only ever use', 'unscented detergent', 'because of my skin'],
  ['I really cannot stand', 'automated phone menus', 'so email is much better for me'],
  ['For work I mostly rely on', 'left-handed scissors', 'which is why the grip matters to me'],
  ['At home we only drink', 'decaf', 'after six in the evening'],
  ['I tend to pay with', 'store credit', 'whenever it is offered'],
  ['My go-to setting is', 'eco mode', 'because the electricity here is expensive'],
];
const FAMILY = [
  ['I have', 'twin daughters', 'who are six'],
  ['I live with my', 'elderly father', 'who uses the kitchen most'],
  ['My', 'partner Jonas', 'set it up originally'],
  ['I share the flat with', 'two roommates', 'who both work night shifts'],
  ['We have a', 'greyhound called Pippin', 'who is scared of the noise'],
];
const JOBS = ['night-shift nurse', 'primary school teacher', 'freelance translator', 'bus driver', 'pastry chef',
  'structural engineer', 'veterinary assistant', 'sound technician', 'librarian', 'park ranger'];

const FILLER = [
  'I have been a loyal customer for quite a while and this is honestly the first time anything like this has happened to me.',
  'I tried following the troubleshooting steps in the little booklet that came in the box, but none of them made any real difference.',
  'To be fair, the delivery people were polite and the box itself looked perfectly fine from the outside when it arrived.',
  'I am not trying to be difficult here, I just want to understand what my options are before I decide anything.',
  'Honestly it has been a long week and I was really looking forward to finally having this sorted out.',
  'I read a few reviews online before buying and most of them were positive, which is partly why I am so surprised.',
  'I would appreciate it if you could look into this properly instead of sending me the same generic answer again.',
  'It is not the end of the world, but it is frustrating when you pay for something and it does not work as advertised.',
  'I did take some photos as soon as I noticed the problem, in case those are useful for your records.',
  'My neighbour had a similar issue a while ago and she said your team sorted it out quite quickly, so I am hopeful.',
  'I checked the warranty card and as far as I can tell everything should still be covered at this point.',
  'I also looked through the frequently asked questions on your website but could not find anything that matched my situation.',
  'Please let me know if you need any more details from me, I am happy to answer whatever questions you have.',
  'I would rather not have to pack the whole thing up again unless there is really no other way to fix it.',
  'The instructions were a bit confusing in places, but I am fairly confident I assembled everything the right way.',
  'I called the shop first and they told me to get in touch with you directly, which is why I am writing here.',
  'It has been sitting in the hallway since then because I did not want to make the problem worse by using it.',
  'I hope this message makes sense, I am typing it on my phone while waiting for the kettle to boil.',
  'Anyway, I just wanted to give you the full picture so that you know exactly what happened from start to finish.',
  'Thank you for your patience with all of this, I know you probably deal with a lot of these messages every day.',
];
const ASSISTANT = [
  'Thank you for the detailed explanation, that is really helpful. I am sorry to hear about the trouble. Could you tell me a little more about when you first noticed the problem and whether anything changed around that time?',
  'I understand how frustrating this must be, and I appreciate you taking the time to write it all down. I have added these details to your case. Is there anything else about the situation that I should know before I pass it to the repair team?',
  'Thanks for your patience. I have checked the notes on your account and everything you describe is consistent with what we see. Let me look into the available options and come back to you with a proposal.',
  'That makes sense, thank you. I will make a note of it. In the meantime, could you confirm whether the item is still in its original packaging, or whether it has been fully assembled and used?',
  'I appreciate you sharing all of this. We want to get it right the first time, so I am going to ask a couple of follow-up questions. How often do you use it, and has the issue become worse over time?',
  'Thank you, that is noted. I can see why this is important to you. Our team usually replies within two working days, and I will make sure your preferences are passed along with the case.',
];

/** One fact: its sentence and the value whose survival we check. */
function makeFacts(person) {
  const product = person.product;
  const part = pick(product.parts);
  const part2 = pick(product.parts.filter((p) => p !== part));
  const n = pick(NUMBER_WORDS);
  const damage = pick(DAMAGE);
  const pref = pick(PREFERENCES);
  const fam = pick(FAMILY);
  const month = pick(MONTHS);
  const day = pick(DAYS);
  const orderNo = String(10000 + Math.floor(rand() * 89999));
  const facts = [
    pick([
      { kind: 'name', sentence: `My name is ${person.first}, by the way.`, value: person.first },
      { kind: 'name', sentence: `I'm ${person.first} ${person.last} and I am writing about my recent order.`, value: person.first },
      { kind: 'name', sentence: `You can call me ${person.first}, everyone does.`, value: person.first },
    ]),
    pick([
      { kind: 'place', sentence: `I live in ${person.place}, so the delivery options might be different here.`, value: person.place },
      { kind: 'place', sentence: `We moved to ${person.place} last spring and bought it for the new flat.`, value: person.place },
      { kind: 'place', sentence: `I'm based in ${person.place}, which is where the parcel was delivered.`, value: person.place },
    ]),
    { kind: 'preference', sentence: `${pref[0]} ${pref[1]} ${pref[2]}.`, value: pref[1] },
    pick([
      { kind: 'count', sentence: `When I unpacked it I found ${n} ${damage} panels on the ${product.name}.`, value: `${n} ${damage} panels` },
      { kind: 'count', sentence: `I ordered ${n} of the replacement filters at the same time.`, value: `${n} of the replacement filters` },
      { kind: 'count', sentence: `It has switched itself off ${n} times since the weekend.`, value: `${n} times` },
    ]),
    { kind: 'part', sentence: `The ${part} on my ${product.name} ${pick(['snapped off', 'stopped working', 'came loose', 'started rattling'])} after a few days.`, value: part },
    pick([
      { kind: 'date', sentence: `I placed the order on ${month} ${3 + Math.floor(rand() * 25)}${pick(['th', ''])} and it arrived a week later.`, value: month },
      { kind: 'date', sentence: `The technician is supposed to come on ${day} morning, if that is still the plan.`, value: day },
    ]),
    { kind: 'number', sentence: `My order number is ${orderNo}, in case you need to look it up.`, value: orderNo },
    { kind: 'family', sentence: `${fam[0]} ${fam[1]} ${fam[2]}.`, value: fam[1] },
    { kind: 'job', sentence: `I work as a ${person.job}, so I am mostly free in the ${pick(['mornings', 'evenings', 'afternoons'])}.`, value: person.job },
    { kind: 'part', sentence: `I also noticed that the ${part2} feels ${pick(['wobbly', 'stiff', 'sticky', 'uneven'])} when I use it.`, value: part2 },
  ];
  return shuffle(facts).slice(0, 7 + Math.floor(rand() * 4));
}

function conversation(k) {
  const person = {
    first: pick(FIRST), last: pick(LAST), place: pick(PLACES), product: pick(PRODUCTS), job: pick(JOBS),
  };
  const facts = makeFacts(person);
  const turns = 6 + Math.floor(rand() * 4); // user messages
  const messages = [{
    role: 'system',
    content: 'You are a patient customer-support agent for a home-goods retailer. Keep track of what the customer tells you about themselves and their order.',
  }];
  // Facts go into the first turns - 2 user messages (outside the recency window of 4).
  const slots = Math.max(1, turns - 2);
  const perTurn = Array.from({ length: slots }, () => []);
  facts.forEach((f, i) => perTurn[i % slots].push(f));
  const filler = shuffle(FILLER);
  let fi = 0;
  const records = [];
  for (let t = 0; t < turns; t++) {
    const sentences = [];
    const mine = perTurn[t] ?? [];
    const fillers = 3 + Math.floor(rand() * 3);
    for (let s = 0; s < fillers; s++) sentences.push(filler[fi++ % filler.length]);
    for (const f of mine) sentences.splice(Math.floor(rand() * (sentences.length + 1)), 0, f.sentence);
    if (t === turns - 1) sentences.push('Could you tell me what happens next?');
    const index = messages.length;
    messages.push({ role: 'user', content: sentences.join(' ') });
    for (const f of mine) records.push({ ...f, message_index: index });
    messages.push({ role: 'assistant', content: ASSISTANT[(k + t) % ASSISTANT.length] });
  }
  const questions = records.map((f) => ({
    question: `What did the customer say (${f.kind})?`,
    answers: [f.value],
    answer_message_index: f.message_index,
    kind: f.kind,
  }));
  return {
    id: `user_facts_${String(k).padStart(3, '0')}`,
    messages,
    questions,
    meta: { facts: records.length, user_messages: turns, generator: 'bench/data/user_facts/generate.mjs' },
  };
}

for (let k = 0; k < count; k++) process.stdout.write(`${JSON.stringify(conversation(k))}\n`);
