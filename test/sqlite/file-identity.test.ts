// checkSameFile: the quick look with a plain stat never passes a file the exact identity would refuse
import fs from 'node:fs';
import { test, expect, describe } from '../support/fixtures.ts';
import { checkSameFile, pathIdentity, type FileIdentity } from '../../src/sqlite/index.ts';

/*
 * A follower checks its source's and target's paths before every batch.
 * checkSameFile looks first with a plain stat (numbers, not BigInts) and
 * passes a file only when device, inode and birth time in ms match the
 * opened file's exactly; anything else is decided by the exact identity.
 * Each case below is a file the exact comparison refuses, but that a looser
 * quick look (a birth time within a ms, or dev and ino alone) would pass.
 */
describe('checkSameFile', () => {
  test('the file opened passes; the same inode with another birth time, or another inode, is refused', ({ tmp }) => {
    const file = `${tmp}/a.db`;
    fs.writeFileSync(file, 'x');
    const opened = pathIdentity(file) as FileIdentity;
    expect(() => checkSameFile(file, opened, 'target')).not.toThrow();
    // A birth time is known here (ext4, tmpfs, btrfs and APFS all give one): without it the cases below prove nothing.
    expect(opened.birth).toBeGreaterThan(0);
    for (const birth of [opened.birth - 1, opened.birth + 1, opened.birth + 1000]) {
      expect(() => checkSameFile(file, { ...opened, birth }, 'target'), `birth ${birth} for ${opened.birth}`).toThrow(/was replaced/);
    }
    expect(() => checkSameFile(file, { ...opened, ino: String(BigInt(opened.ino) + 1n) }, 'source')).toThrow(
      /SOURCE_REPLACED|was replaced/,
    );
    expect(() => checkSameFile(file, { ...opened, dev: String(BigInt(opened.dev) + 1n) }, 'source')).toThrow(/was replaced/);
    // An identity past 2^53 (as Windows file ids are) is compared exactly, not as a rounded number.
    expect(() => checkSameFile(file, { ...opened, ino: '9007199254740993' }, 'source')).toThrow(/was replaced/);
  });

  test('a file renamed over the path, or none there, is refused', ({ tmp }) => {
    const file = `${tmp}/b.db`;
    fs.writeFileSync(file, 'x');
    const opened = pathIdentity(file) as FileIdentity;
    fs.writeFileSync(`${tmp}/c.db`, 'y');
    fs.renameSync(`${tmp}/c.db`, file);
    expect(() => checkSameFile(file, opened, 'source')).toThrow(/was replaced by another file/);
    fs.rmSync(file);
    expect(() => checkSameFile(file, opened, 'target')).toThrow(/was deleted/);
  });
});
