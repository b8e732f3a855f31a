// The metadata event of a JFR chunk: a string table and a tree of elements that describes every
// class (event types and the types of their fields) the chunk uses. Elements nest a few levels
// (root → metadata → class → field → annotation); the reader caps the depth and the number of
// elements so a corrupted tree cannot recurse or allocate without end. Pure: no I/O.
import type { Cursor } from './cursor';

export interface JfrField {
  name: string;
  typeId: number;
  /** the value is a key into the constant pool of typeId */
  constantPool: boolean;
  /** an array of typeId values */
  array: boolean;
}

export interface JfrClass {
  id: number;
  name: string;
  superType?: string;
  /** a class with one field that stands for it (jdk.types.Symbol is a string) */
  simpleType: boolean;
  fields: JfrField[];
  /** an event type (its super type is jdk.jfr.Event) */
  event: boolean;
  /** the value of @jdk.jfr.Label, where the class has one */
  label?: string;
}

export interface JfrMetadata {
  classes: Map<number, JfrClass>;
  byName: Map<string, JfrClass>;
}

interface Element {
  name: string;
  attributes: Map<string, string>;
  children: Element[];
}

/** Nesting of the element tree: real metadata is 5 deep. */
export const MAX_METADATA_DEPTH = 16;

function readElement(c: Cursor, strings: string[], depth: number, count: { n: number; max: number }): Element {
  if (depth > MAX_METADATA_DEPTH) c.fail(`the metadata nests deeper than ${MAX_METADATA_DEPTH} levels`);
  if (++count.n > count.max) c.fail(`the metadata has more than ${count.max} elements`);
  const str = (): string => {
    const at = c.pos;
    const i = c.int();
    if (i < 0 || i >= strings.length) c.fail(`the metadata refers to string ${i} of ${strings.length}`, at);
    return strings[i];
  };
  const name = str();
  const attributes = new Map<string, string>();
  const nAttr = c.length('an element\'s attributes');
  for (let i = 0; i < nAttr; i++) {
    const k = str();
    attributes.set(k, str());
  }
  const nChildren = c.length('an element\'s children');
  const children: Element[] = [];
  for (let i = 0; i < nChildren; i++) children.push(readElement(c, strings, depth + 1, count));
  return { name, attributes, children };
}

function toClass(e: Element, c: Cursor, labels: Map<string, string>): JfrClass {
  const id = Number(e.attributes.get('id'));
  const name = e.attributes.get('name');
  if (!Number.isSafeInteger(id) || !name) c.fail(`a class of the metadata has no id or name (${name ?? '?'})`);
  const fields: JfrField[] = [];
  let label: string | undefined;
  for (const ch of e.children) {
    if (ch.name === 'field') {
      const typeId = Number(ch.attributes.get('class'));
      if (!Number.isSafeInteger(typeId)) c.fail(`field ${ch.attributes.get('name') ?? '?'} of ${name} has no type`);
      fields.push({ name: ch.attributes.get('name') ?? '', typeId, constantPool: ch.attributes.get('constantPool') === 'true', array: ch.attributes.get('dimension') === '1' });
    } else if (ch.name === 'annotation') {
      const v = ch.attributes.get('value');
      if (v !== undefined && labels.get(ch.attributes.get('class') ?? '') === 'jdk.jfr.Label') label = v;
    }
  }
  const superType = e.attributes.get('superType');
  return { id, name, superType, simpleType: e.attributes.get('simpleType') === 'true', fields, event: superType === 'jdk.jfr.Event', label };
}

/** Reads the metadata event whose size field starts at c.pos (the cursor ends at the event's end). */
export function readMetadata(c: Cursor, maxElements: number): JfrMetadata {
  const start = c.pos;
  const size = c.int();
  if (size <= 0 || start + size > c.end) c.fail(`the metadata event has a size of ${size}`, start);
  const end = c.end;
  c.end = start + size;
  try {
    if (c.long() !== 0) c.fail('the metadata position of the chunk header does not point at a metadata event', start);
    c.long(); // start time
    c.long(); // duration
    c.long(); // metadata id
    const n = c.length('the metadata string table');
    const strings: string[] = [];
    for (let i = 0; i < n; i++) strings.push(c.literal() ?? '');
    const root = readElement(c, strings, 0, { n: 0, max: maxElements });
    const elements: Element[] = [];
    for (const ch of root.children) if (ch.name === 'metadata') elements.push(...ch.children.filter((x) => x.name === 'class'));
    // annotations refer to their class by id: @Label's id, to find each class's label
    const labels = new Map<string, string>();
    for (const e of elements) labels.set(e.attributes.get('id') ?? '', e.attributes.get('name') ?? '');
    const classes = new Map<number, JfrClass>();
    const byName = new Map<string, JfrClass>();
    for (const e of elements) {
      const k = toClass(e, c, labels);
      classes.set(k.id, k);
      byName.set(k.name, k);
    }
    return { classes, byName };
  } finally {
    c.end = end;
    c.pos = start + size;
  }
}
