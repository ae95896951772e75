import { languageFromProto } from '@ratchet/agent';
import { Language, type ProjectProfile } from '@ratchet/contracts';
import { AppError, ErrorCode } from '@ratchet/errors';

/** Where profiles come from, as error messages name it (relative to the config directory's parent). */
export const profilesLocation = 'config/profiles/*.yaml';

/**
 * Whether `profile` fits a task in `language`: a profile for any language
 * (LANGUAGE_UNSPECIFIED) fits every task, and every profile fits a task
 * whose language is not set.
 */
export function profileFits(profile: ProjectProfile, language: Language): boolean {
  return profile.language === Language.LANGUAGE_UNSPECIFIED || language === Language.LANGUAGE_UNSPECIFIED || profile.language === language;
}

/**
 * The profile a task submitted with `name` builds to. Names compare without
 * surrounding blanks and case (`Web_App` is web_app).
 *
 * @param profiles the configured profiles (`loadProfiles`).
 * @param name the request's `profile`; empty or blank for none.
 * @param language the task's language.
 * @returns the profile, or undefined when `name` is empty.
 * @throws AppError INVALID_ARGUMENT when no profile has that name (the
 *   message lists the known ones), or when the profile is written for
 *   another language than the task's (the message says which, and which
 *   profiles fit the task's).
 */
export function resolveProfile(profiles: readonly ProjectProfile[], name: string, language: Language): ProjectProfile | undefined {
  const wanted = name.trim().toLowerCase();
  if (wanted === '') return undefined;
  const profile = profiles.find((candidate) => candidate.name.toLowerCase() === wanted);
  if (profile === undefined) {
    const known = profiles.map((candidate) => candidate.name).sort();
    const listed = known.length === 0 ? 'no profiles are configured' : `known: ${known.join(', ')}`;
    throw new AppError(ErrorCode.INVALID_ARGUMENT, `unknown profile ${JSON.stringify(name.trim())}; ${listed} (${profilesLocation})`);
  }
  if (!profileFits(profile, language)) {
    const profileLanguage = languageFromProto(profile.language);
    const taskLanguage = languageFromProto(language);
    const fitting = profiles
      .filter((candidate) => profileFits(candidate, language))
      .map((candidate) => candidate.name)
      .sort();
    const alternatives = fitting.length === 0 ? `no profile is for ${taskLanguage}` : `profiles for ${taskLanguage}: ${fitting.join(', ')}`;
    throw new AppError(
      ErrorCode.INVALID_ARGUMENT,
      `profile ${JSON.stringify(profile.name)} is for ${profileLanguage}, and the task is in ${taskLanguage}: set the task's language to ${profileLanguage} (--lang ${profileLanguage}), or choose another profile (${alternatives})`,
    );
  }
  return profile;
}
