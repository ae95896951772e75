import { describe, expect, it } from '@jest/globals';
import { projectKeyFromDirectory, projectKeyFromRemote } from './project';

describe('project keys', () => {
  it('turns any form of a git remote into host/path, without credentials', () => {
    expect(projectKeyFromRemote('https://github.com/team/app.git')).toBe('github.com/team/app');
    expect(projectKeyFromRemote('https://user:s3cret-token@github.com/team/app.git')).toBe('github.com/team/app');
    expect(projectKeyFromRemote('git@github.com:team/app.git')).toBe('github.com/team/app');
    expect(projectKeyFromRemote('ssh://git@gitlab.example.com:2222/group/sub/app')).toBe('gitlab.example.com:2222/group/sub/app');
    expect(projectKeyFromRemote('/srv/git/app.git')).toBe('srv/git/app');
    expect(projectKeyFromRemote('   ')).toBeUndefined();
  });
  it('falls back to the directory name', () => {
    expect(projectKeyFromDirectory('/home/someone/my project')).toBe('dir:my-project');
  });
});
