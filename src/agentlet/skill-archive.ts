// A skill archive: a `.zip` or `.skill` file holding one skill, read whole in memory with yauzl (nothing is
// written while it is read). Its files are the skill's files: at the archive's top, or inside its single top
// folder. Every entry must stay inside the skill: an absolute name, a `..` segment, a symbolic link or any
// other special entry refuses the archive, as do more entries, files, bytes or folder depth than a skill
// folder may hold, and a compression ratio above the bound (a zip bomb).
import path from 'node:path';
import yauzl from 'yauzl';
import { LINE_CONTROL_CHARACTER } from '../text/text-rules.js';

export const ARCHIVE_EXTENSIONS = ['.zip', '.skill'] as const;

export interface ArchiveLimits {
  /** Entries in the archive, folders included. */
  archiveEntries: number;
  files: number;
  /** Bytes of all files, unpacked. */
  bytes: number;
  depth: number;
  /** How many times its own size the archive may unpack to. */
  archiveRatio: number;
}

export interface ArchiveFile {
  rel: string;
  bytes: Buffer;
  mode: number;
}

export class ArchiveRefusal extends Error {
  constructor(
    readonly code: 'skill_archive_invalid' | 'skill_archive_too_large',
    message: string,
  ) {
    super(message);
  }
}

/** Whether a file name is a skill archive's (`.zip` or `.skill`, in any case). */
export function isSkillArchive(name: string): boolean {
  return (ARCHIVE_EXTENSIONS as readonly string[]).includes(path.extname(name).toLowerCase());
}

/** The archive's file name without its extension. */
export function archiveStem(name: string): string {
  const base = path.basename(name);
  return base.slice(0, base.length - path.extname(base).length);
}

const invalid = (message: string) => new ArchiveRefusal('skill_archive_invalid', message);
const tooLarge = (message: string) => new ArchiveRefusal('skill_archive_too_large', message);
const S_IFMT = 0o170000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;
const S_IFLNK = 0o120000;
/** macOS's resource forks beside the files a Finder archive holds; never part of a skill. */
const MAC_METADATA = '__MACOSX/';

function open(bytes: Buffer): Promise<yauzl.ZipFile> {
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(bytes, { lazyEntries: true, decodeStrings: true, validateEntrySizes: true, strictFileNames: true }, (err, zip) =>
      err ? reject(err) : resolve(zip),
    );
  });
}

function entriesOf(zip: yauzl.ZipFile): Promise<yauzl.Entry[]> {
  return new Promise((resolve, reject) => {
    const entries: yauzl.Entry[] = [];
    zip.on('entry', (entry: yauzl.Entry) => {
      entries.push(entry);
      zip.readEntry();
    });
    zip.on('end', () => resolve(entries));
    zip.on('error', reject);
    zip.readEntry();
  });
}

function contentOf(zip: yauzl.ZipFile, entry: yauzl.Entry): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    zip.openReadStream(entry, (err, stream) => {
      if (err) return reject(err);
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      stream.on('end', () => resolve(Buffer.concat(chunks)));
      stream.on('error', reject);
    });
  });
}

/**
 * The files of a skill archive, with the name of its single top folder when its files sit in one. Throws an
 * ArchiveRefusal saying what is wrong.
 */
export async function readSkillArchive(bytes: Buffer, limits: ArchiveLimits): Promise<{ files: ArchiveFile[]; topFolder?: string }> {
  let zip: yauzl.ZipFile;
  try {
    zip = await open(bytes);
  } catch (err) {
    throw invalid(`not a zip archive (${(err as Error).message})`);
  }
  try {
    if (zip.entryCount > limits.archiveEntries) throw tooLarge(`more than ${limits.archiveEntries} entries`);
    let entries: yauzl.Entry[];
    try {
      entries = await entriesOf(zip);
    } catch (err) {
      // yauzl refuses an absolute name, a `..` segment and a backslash before handing the entry over.
      throw invalid(`an entry is refused: ${(err as Error).message}`);
    }
    const wanted: { entry: yauzl.Entry; rel: string; mode: number }[] = [];
    let declared = 0;
    for (const entry of entries) {
      const name = entry.fileName;
      if (name.startsWith(MAC_METADATA)) continue;
      if (LINE_CONTROL_CHARACTER.test(name)) throw invalid(`an entry's name holds a control character`);
      const segments = name.replace(/\/$/, '').split('/');
      if (name.startsWith('/') || segments.some((s) => s === '' || s === '.' || s === '..'))
        throw invalid(`${JSON.stringify(name)} leads outside the skill folder`);
      const unix = entry.versionMadeBy >> 8 === 3;
      const attributes = unix ? entry.externalFileAttributes >>> 16 : 0;
      const type = attributes & S_IFMT;
      if (type === S_IFLNK) throw invalid(`${name} is a symbolic link`);
      if (name.endsWith('/') || type === S_IFDIR) continue;
      if (type !== 0 && type !== S_IFREG) throw invalid(`${name} is neither a file nor a folder`);
      if (entry.isEncrypted()) throw invalid(`${name} is encrypted`);
      declared += entry.uncompressedSize;
      wanted.push({ entry, rel: segments.join('/'), mode: unix && (attributes & 0o777) !== 0 ? attributes & 0o777 : 0o644 });
    }
    if (wanted.length > limits.files) throw tooLarge(`more than ${limits.files} files`);
    if (declared > limits.bytes) throw tooLarge(`more than ${limits.bytes} bytes in all, unpacked`);
    if (declared > limits.archiveRatio * bytes.length)
      throw tooLarge(`unpacks to ${declared} bytes, more than ${limits.archiveRatio} times its own ${bytes.length}`);

    const rels = new Set<string>();
    for (const { rel } of wanted) {
      if (rels.has(rel)) throw invalid(`${rel} is in the archive twice`);
      rels.add(rel);
    }
    for (const { rel } of wanted) {
      const segments = rel.split('/');
      for (let i = 1; i < segments.length; i++) {
        if (rels.has(segments.slice(0, i).join('/'))) throw invalid(`${segments.slice(0, i).join('/')} is both a file and a folder`);
      }
    }
    // One top folder holding every file: the skill is that folder.
    const tops = new Set(wanted.map(({ rel }) => (rel.includes('/') ? rel.split('/')[0]! : '')));
    const topFolder = tops.size === 1 && !tops.has('') ? [...tops][0]! : undefined;
    const files: ArchiveFile[] = [];
    let total = 0;
    for (const { entry, rel, mode } of wanted) {
      const inner = topFolder === undefined ? rel : rel.slice(topFolder.length + 1);
      if (inner.split('/').length - 1 > limits.depth) throw tooLarge(`${inner} is nested deeper than ${limits.depth} folders`);
      let content: Buffer;
      try {
        content = await contentOf(zip, entry);
      } catch (err) {
        throw invalid(`${rel} cannot be unpacked (${(err as Error).message})`);
      }
      total += content.length;
      if (total > limits.bytes) throw tooLarge(`more than ${limits.bytes} bytes in all, unpacked`);
      files.push({ rel: inner, bytes: content, mode });
    }
    return topFolder === undefined ? { files } : { files, topFolder };
  } finally {
    zip.close();
  }
}
