import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { enrollmentPath, isEnrollmentFile, readEnrollment, writeJsonFile, type EnrollmentFile } from './files.ts';

const enrollment: EnrollmentFile = {
  version: 1,
  apiEndpoint: 'http://127.0.0.1:18080',
  envZId: 'env123',
  enrollmentId: 'enr456',
  token: 'svce_secret',
  controller: { zId: 'ctl789', publicKey: 'pk' },
  enrolledAt: '2025-01-01T00:00:00Z',
};

describe('enrollment files', () => {
  it('accepts a version 1 enrollment with every field, and nothing less', () => {
    expect(isEnrollmentFile(enrollment)).toBe(true);
    expect(isEnrollmentFile({ ...enrollment, version: 2 })).toBe(false);
    expect(isEnrollmentFile({ ...enrollment, token: '' })).toBe(false);
    expect(isEnrollmentFile({ ...enrollment, controller: { zId: 'ctl789' } })).toBe(false);
    expect(isEnrollmentFile(null)).toBe(false);
  });

  it('reads the data directory file: absent, valid, or corrupt with the command that rewrites it', () => {
    const dir = mkdtempSync(join(tmpdir(), 'svc-files-'));
    expect(readEnrollment(dir)).toBeUndefined();
    writeJsonFile(enrollmentPath(dir), enrollment);
    expect(readEnrollment(dir)).toEqual(enrollment);
    writeFileSync(enrollmentPath(dir), '{"version":1}', { mode: 0o600 });
    expect(() => readEnrollment(dir)).toThrow(/is not a valid svc agent enroll file/);
  });
});
