export { createDefinitionExtractor, DefinitionKind, grammarOfPath, outlineFile, SyntaxGrammar } from './definitions';
export type { Definition, DefinitionExtractor, DefinitionExtractorOptions, FileOutline, SyntaxParsers } from './definitions';
export { definitionExtractorLoader, loadDefinitionExtractor, loadSyntaxParsers } from './syntax-parsers';
export type { DefinitionExtractorLoader } from './syntax-parsers';
export { buildRepoMap, focusTerms, looksMinified, rankFiles, termDefinitionLines, termMentionLines } from './repo-map';
export type { RankedFile, RepoFile, RepoMap, RepoMapFocus, RepoMapRequest } from './repo-map';
