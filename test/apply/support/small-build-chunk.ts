/*
 * Imported first (before anything from src/) by a test that crosses the
 * chunk boundaries of a protected rebuild: BUILD_CHUNK (shadow-build.ts) is
 * read from SLUICE_BUILD_CHUNK when that module loads, so the build's chunks
 * are small in this test's process and in every CLI it spawns, and
 * 2 x BUILD_CHUNK + 500 rows make the same chunks as with the real size
 * (two whole, and a part of one: 20,000, 20,000, 500) from 2,500 rows
 * instead of 40,500. A test file that imports this runs in a process of
 * its own (vitest.config.ts finds it by the import), so no other file sees it.
 */
export const SMALL_BUILD_CHUNK = 1000;
process.env.SLUICE_BUILD_CHUNK = String(SMALL_BUILD_CHUNK);
