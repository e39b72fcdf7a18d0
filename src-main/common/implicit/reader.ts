// The reader: turns what the user did after an answer (signals.ts) into a weak label with a confidence, by rules a
// person can read. Each rule has a name, a label, a confidence and its phrases in English, German, Spanish and French;
// a label says which rule fired and quotes the words that fired it, so Rein can say "read this as Bad because you
// wrote: 'that's wrong'". Where the rules are unsure they say nothing: fewer labels that are right over many that are
// noisy. Precision and recall on a hand-labelled corpus: reader.test.ts (fixtures/followups.jsonl).
//
// Phrases are matched against the follow-up lower-cased, with accents removed and curly apostrophes straightened
// (normalize), so one pattern covers "está mal" and "esta mal"; German umlauts become the bare vowel (ü → u), so a
// German pattern takes both spellings ("gel(o|oe)scht"). A Bad phrase anywhere wins over a Good one: sarcasm
// ("great, now nothing compiles") and "thanks, but it still fails" are Bad. A Good phrase counts only when no negation
// or condition stands just before it ("not great", "make sure it works").
import type { Signal } from './signals.ts';

export type WeakValue = 'good' | 'bad';

export interface WeakLabel {
  value: WeakValue;
  /** How often this rule is right, as the rule's author judged it (0..1); compared with the threshold. */
  confidence: number;
  /** The rule that fired (RULES[].name, or a signal rule: 'reverted', 'contradicted', 'interrupted', 'reask'). */
  rule: string;
  /** The user's words (or the client's event) that fired it, as written. */
  quote: string;
  /** The signal it was read from. */
  signalId: number | null;
}

/** Labels below this confidence are not suggested (implicit.threshold). */
export const DEFAULT_THRESHOLD = 0.8;

export interface TextRule {
  name: string;
  value: WeakValue;
  confidence: number;
  /** What the rule means, for a person reading the rules or a label. */
  means: string;
  /**
   * `anywhere`: the phrase counts wherever it is; `opening`: only in the follow-up's first clause (praise words that
   * are also ordinary words: "add a nice error message", "call super()").
   */
  where: 'anywhere' | 'opening';
  /** By language (en, de, es, fr): patterns over the normalized text. */
  phrases: Record<'en' | 'de' | 'es' | 'fr', RegExp[]>;
}

const w = (s: string): RegExp => new RegExp(s, 'u');

export const RULES: readonly TextRule[] = [
  {
    name: 'says-wrong',
    value: 'bad',
    confidence: 0.9,
    means: 'the user says the answer is wrong or not what they asked',
    where: 'anywhere',
    phrases: {
      en: [
        w(String.raw`\b(that'?s|that is|this is|it'?s|its|thats|you'?re|answer is|all|completely|totally|still|was) (\w+ )?(wrong|incorrect)\b`),
        w(String.raw`^(wrong|incorrect)\b`),
        w(String.raw`\bwrong (file|function|answer|one|approach|method|place|command|branch|config|variable|class|module|line)\b`),
        w(String.raw`\bnot (quite )?(right|correct)\b`),
        w(String.raw`\bnot (what|it) i (asked|wanted|meant|need|needed)\b`),
        w(String.raw`\bnot what i\b`),
        w(String.raw`\b(that'?s|this is|it'?s) not it\b`),
        w(String.raw`\bmisunderst(ood|and)\b`),
        w(String.raw`\b(doesn'?t|does not|didn'?t|did not) answer\b`),
        w(String.raw`\b(the )?(old|outdated|deprecated) (api|version|syntax)\b`),
      ],
      de: [
        w(String.raw`\b(das ist|ist|das|alles|vo(e)?llig|komplett|war) (\w+ )?falsch\b`),
        w(String.raw`^falsch\b`),
        w(String.raw`\bfalsche[nrs]? (datei|funktion|methode|antwort|stelle|klasse|zeile)\b`),
        w(String.raw`\bnicht richtig\b`),
        w(String.raw`\bstimmt nicht\b`),
        w(String.raw`\bnicht (das|was),? (was )?ich\b`),
        w(String.raw`\bhabe ich nicht (gefragt|gewollt|gemeint)\b`),
        w(String.raw`\b(alte|veraltete) (api|version|syntax)\b`),
      ],
      es: [
        w(String.raw`\b(esta|eso esta|todo esta|esto esta) mal\b`),
        w(String.raw`^mal\b`),
        w(String.raw`\bincorrect[oa]\b`),
        w(String.raw`\bno es correcto\b`),
        w(String.raw`\bequivocad[oa]\b`),
        w(String.raw`\bno es lo que (pedi|queria|necesito|necesitaba)\b`),
        w(String.raw`\b(api|version|sintaxis) (vieja|antigua|obsoleta)\b`),
      ],
      fr: [
        w(String.raw`\bc'est (\w+ )?faux\b`),
        w(String.raw`^faux\b`),
        w(String.raw`\bincorrecte?\b`),
        w(String.raw`\bpas correcte?\b`),
        w(String.raw`\bmauvaise? (fichier|fonction|methode|reponse|classe|ligne|endroit)\b`),
        w(String.raw`\bpas (du tout )?ce que (j'ai demande|je voulais|je veux|je voulais dire)\b`),
        w(String.raw`\b(ancienne|vieille) (api|version|syntaxe)\b`),
      ],
    },
  },
  {
    name: 'still-failing',
    value: 'bad',
    confidence: 0.9,
    means: 'the user reports that it still fails, fails again, or got worse',
    where: 'anywhere',
    phrases: {
      en: [
        w(String.raw`\bstill (fails?|failing|broken|doesn'?t|does not|not working|getting|get|the same|red|crash(es|ing)?|throws?|there|empty|skips?|errors?)\b`),
        w(String.raw`\bsame (error|problem|bug|issue|exception|failure)\b`),
        w(String.raw`\b(doesn'?t|does not|didn'?t|did not|won'?t|will not|isn'?t|don'?t|do not)( even)? (work|compile|run|start|fix|help|build|pass|load)\b`),
        w(String.raw`\b(fails?|failing|failed|crash(es|ed)?|broken|red) (again|now)\b`),
        w(String.raw`\b(it|this|that) (now )?(breaks|broke|crashes|crashed|fails|failed)\b`),
        w(String.raw`\bnothing (works|compiles|runs|builds|loads)\b`),
        w(String.raw`\bworse\b`),
        w(String.raw`\banother (error|stack ?trace|bug|exception|null pointer|crash|failure)\b`),
        w(String.raw`\bfailing again\b`),
        w(String.raw`\bstill (seeing|prints?|shows?|returns?|happening|has|\d{3})\b`),
        w(String.raw`\bsame \d{3}\b`),
        w(String.raw`\b(not going to|won'?t|will not) work\b`),
        w(String.raw`\b(didn'?t|did not) (do|change) anything\b`),
        w(String.raw`\b(timing|times) out\b`),
        w(String.raw`\bfrom \d+ (failures|errors) to \d+\b`),
      ],
      de: [
        w(String.raw`\bimmer noch (nicht|derselbe|der gleiche|dieselbe|die gleiche|rot|kaputt|falsch|fehl)`),
        w(String.raw`\bschla(e)?gt (\w+ )*fehl\b`),
        w(String.raw`\b(gleiche[rn]?|derselbe|dieselbe) (fehler|problem)\b`),
        w(String.raw`\b(funktioniert|klappt|geht|kompiliert|la(e)?uft|laufen|startet) (\w+ )?(noch |immer noch |jetzt |mal )?(nicht|gar nicht)\b`),
        w(String.raw`\bhat nicht (geklappt|funktioniert)\b`),
        w(String.raw`\bschlimmer\b`),
        w(String.raw`\bkaputt\b`),
        w(String.raw`\bnicht (mal )?mehr\b`),
        w(String.raw`\bnichts mehr\b`),
        w(String.raw`\bimmer noch \d{3}\b`),
        w(String.raw`\bnichts (bewirkt|geandert|gebracht)\b`),
        w(String.raw`\bjetzt gibt es (einen|ein) (timeout|fehler)\b`),
      ],
      es: [
        w(String.raw`\bsigue (sin|fallando|igual|el mismo|en rojo|roto|mal)\b`),
        w(String.raw`\bsiguen (fallando|en rojo|igual)\b`),
        w(String.raw`\bmismo error\b`),
        w(String.raw`\bno (funciona|funciono|compila|arranca|anda|corre|pasa)\b`),
        w(String.raw`\bya no (arranca|funciona|compila|corre)\b`),
        w(String.raw`\bpeor\b`),
        w(String.raw`\broto\b`),
        w(String.raw`\btampoco\b`),
        w(String.raw`\bni siquiera\b`),
        w(String.raw`\bsigue dando\b`),
        w(String.raw`\bno va a funcionar\b`),
        w(String.raw`\bno hizo nada\b`),
        w(String.raw`\bda timeout\b`),
      ],
      fr: [
        w(String.raw`\b(ne|n')( ?se)? ?(marche|fonctionne|compile|demarre|lance|lancent|passe|passent)( toujours| meme)? (pas|plus)\b`),
        w(String.raw`\bn'a pas (marche|fonctionne)\b`),
        w(String.raw`\bechoue(nt)? (toujours|encore)\b`),
        w(String.raw`\btoujours (la meme|le meme|rouges?|pas|casse)\b`),
        w(String.raw`\bmeme (erreur|probleme|bug)\b`),
        w(String.raw`\bpire\b`),
        w(String.raw`\bcasse\b`),
        w(String.raw`\bplus rien ne\b`),
        w(String.raw`\btoujours \d{3}\b`),
        w(String.raw`\bne va pas marcher\b`),
        w(String.raw`\bn'a rien change\b`),
        w(String.raw`\ben timeout\b`),
      ],
    },
  },
  {
    name: 'broke-now',
    value: 'bad',
    confidence: 0.85,
    means: 'the user reports a crash, a blank page or an error that came with the answer',
    where: 'anywhere',
    phrases: {
      en: [
        w(String.raw`\b(segfaults?|segmentation fault|buggy|blank)\b`),
        w(String.raw`\b(returns?|throws?|gives?|getting) (a |an )?(500|404|error|exception)\b`),
        w(String.raw`\b(managed to )?break (two|everything|it|things|the)\b`),
        w(String.raw`\b(the )?(other|another) (test|tests|thing|page|endpoint) (fails?|broke|breaks|is broken)\b`),
        w(String.raw`\bnow (it |the \w+ )?(fails|crashes|segfaults|errors|breaks)\b`),
        w(String.raw`\b(error|fails?|broke|broken)\b.*\bafter your (change|edit|fix|commit)\b`),
        w(String.raw`\bcomplaining now\b`),
        w(String.raw`\b(deleted|wiped|dropped) (the|my|all|our)\b`),
        w(String.raw`(?<!\bno )\b(two|three|2|3|more|new) (bugs|errors|failures)\b`),
        w(String.raw`\bintroduces? (a|an) (race|bug|regression|memory leak|deadlock)\b`),
        w(String.raw`\b(gives?|shows?|throws?) \d+ (errors|failures|warnings)\b`),
      ],
      de: [w(String.raw`\bstu(e)?rzt (\w+ )*ab\b`), w(String.raw`\babsturz\b`), w(String.raw`\bjetzt leer\b`), w(String.raw`\b(zwei|drei|neue) (bugs|fehler)\b`)],
      es: [w(String.raw`\ben blanco\b`), w(String.raw`\berror 500\b`), w(String.raw`\bse (cae|cuelga|rompe)\b`), w(String.raw`\b(dos|tres|nuevos) (bugs|errores)\b`)],
      fr: [w(String.raw`\bplante\b`), w(String.raw`\b(page )?(est )?blanche\b`), w(String.raw`\berreur 500\b`), w(String.raw`\b(deux|trois|nouveaux) (bugs|erreurs)\b`)],
    },
  },
  {
    name: 'you-missed',
    value: 'bad',
    confidence: 0.85,
    means: 'the user says the agent ignored, forgot, broke or made something up',
    where: 'anywhere',
    phrases: {
      en: [
        w(String.raw`\byou (didn'?t|did not|forgot|missed|ignored|changed|deleted|removed|broke|misread|made (it|that|this) up|(just )?repeated)\b`),
        w(String.raw`\bi (said|told you|asked for|meant)\b`),
        w(String.raw`\bwhy did you\b`),
        w(String.raw`\byou keep\b`),
        w(String.raw`\bi (never|didn'?t|did not) ask(ed)?\b`),
        w(String.raw`\bi asked you\b`),
        w(String.raw`\b(isn'?t|is not|doesn'?t|does not)\b.*\bat all\b`),
        w(String.raw`\b(that'?s|that is|this is) not how\b`),
        w(String.raw`\bmade (it|that|this) up\b`),
        w(String.raw`\bhallucinat`),
        w(String.raw`\b(that|this|it|which)( function| method| flag| file| option| api)? (doesn'?t|does not) exist\b`),
        w(String.raw`\bthere(?:'s| is) no (such|--)`),
        w(String.raw`\bthanks? (a lot )?for (deleting|breaking|removing|nothing|wasting)\b`),
      ],
      de: [
        w(String.raw`\bdu hast (\w+ ){0,4}(vergessen|ignoriert|kaputt gemacht|gelo(e)?scht|erfunden|falsch|entfernt)\b`),
        w(String.raw`\bich (habe|hab) (doch )?gesagt\b`),
        w(String.raw`\bwarum hast du\b`),
        w(String.raw`\bgibt es nicht\b`),
        w(String.raw`\berfunden\b`),
        w(String.raw`\bgelo(e)?scht hast\b`),
      ],
      es: [
        w(String.raw`\b(olvidaste|ignoraste|rompiste|borraste|quitaste|te lo inventaste|inventaste)\b`),
        w(String.raw`\bcambiaste (\w+ )?equivocad[ao]\b`),
        w(String.raw`\bte dije\b`),
        w(String.raw`\bpor que (borraste|cambiaste|rompiste|quitaste)\b`),
        w(String.raw`\b(ese|esa|este|esta) (\w+ )?no existe\b`),
        w(String.raw`\bpor (borrar|romper|eliminar)\b`),
      ],
      fr: [
        w(String.raw`\btu as (\w+ ){0,3}(oublie|ignore|casse|supprime|invente|modifie la mauvaise|enleve)`),
        w(String.raw`\bje t'ai dit\b`),
        w(String.raw`\bpourquoi tu as\b`),
        w(String.raw`\b(cette|ce|cet) (\w+ )?n'existe pas\b`),
        w(String.raw`\bd'avoir (supprime|casse|efface)\b`),
      ],
    },
  },
  {
    name: 'revert',
    value: 'bad',
    confidence: 0.85,
    means: 'the user asks to undo what the agent did',
    where: 'anywhere',
    phrases: {
      en: [
        w(String.raw`^(please )?(revert|undo|roll ?back)( it| that| this)?( please)?[.!]*$`),
        w(String.raw`\b(revert|undo|roll ?back) (that|this|it|the last|your|these|those|everything|all|my)\b`),
        w(String.raw`\bput (it|that|them) back\b`),
      ],
      de: [w(String.raw`\bru(e)?ckga(e)?ngig\b`), w(String.raw`\bzuru(e)?ck(setzen|nehmen)\b`)],
      es: [w(String.raw`\b(deshaz|deshacer|revierte|revertir)\b`)],
      fr: [w(String.raw`\bannule\b`), w(String.raw`\brevenir en arriere\b`), w(String.raw`\bremets\b`)],
    },
  },
  {
    name: 'opens-with-no',
    value: 'bad',
    confidence: 0.85,
    means: 'the follow-up opens with a plain no (or stop)',
    where: 'anywhere',
    phrases: {
      en: [w(String.raw`^(hmm+,? )?(no+|nope|nah|stop)\b(?! (problem|worries|need|more|errors?|issues?|longer|rush))`)],
      de: [w(String.raw`^(nein|noe|nee)\b|^no,`)],
      es: [w(String.raw`^no([,.!]|$)`)],
      fr: [w(String.raw`^non\b`)],
    },
  },
  {
    name: 'almost',
    value: 'bad',
    confidence: 0.85,
    means: 'the user says it is close but not there',
    where: 'anywhere',
    phrases: {
      en: [w(String.raw`^(close|almost|nearly|not quite)\b`)],
      de: [w(String.raw`^(fast|beinahe|knapp)\b`)],
      es: [w(String.raw`^casi\b`)],
      fr: [w(String.raw`^presque\b`)],
    },
  },
  {
    name: 'dismissive',
    value: 'bad',
    confidence: 0.85,
    means: 'the user calls the answer useless, or answers with sarcasm ("as if")',
    where: 'anywhere',
    phrases: {
      en: [w(String.raw`\b(useless|wtf|ugh|good grief)\b`), w(String.raw`\bare you kidding\b`), w(String.raw`\bgoing in circles\b`), w(String.raw`\b(yeah right|as if)\b`)],
      de: [w(String.raw`\bnutzlos\b`), w(String.raw`\bals ob\b`), w(String.raw`\bja klar\b`)],
      es: [w(String.raw`\bno sirve\b`), w(String.raw`\bcomo si\b`), w(String.raw`\bsi, claro\b`)],
      fr: [w(String.raw`\bne sert a rien\b`), w(String.raw`\bcomme si\b`)],
    },
  },
  {
    name: 'doubt',
    value: 'bad',
    confidence: 0.6,
    means: 'the user doubts the answer',
    where: 'anywhere',
    phrases: {
      en: [w(String.raw`\bare you sure\b`), w(String.raw`^hmm+\b`)],
      de: [w(String.raw`\bbist du sicher\b`)],
      es: [w(String.raw`\bestas segur[oa]\b`)],
      fr: [w(String.raw`\btu es sur\b`)],
    },
  },
  {
    name: 'it-works',
    value: 'good',
    confidence: 0.9,
    means: 'the user reports that it works, passes, or is right now',
    where: 'anywhere',
    phrases: {
      en: [
        w(String.raw`\b(that|it|this)( now)? (works|worked|did the trick|fixed it|solved it)\b`),
        w(String.raw`\bworks (now|like a charm|great|perfectly|fine)\b`),
        w(String.raw`\b(working|compiles|passes) now\b`),
        w(String.raw`^(works|worked)\b`),
        w(String.raw`\b(tests?|build|ci) (are |is )?(pass(es)?|green|passing)( now)?\b`),
        w(String.raw`\ball green\b`),
        w(String.raw`\bno more (errors|crashes|failures|warnings)\b`),
        w(String.raw`\bno longer (fails|crashes|errors|throws)\b`),
        w(String.raw`\b(that'?s|that is|it'?s) (exactly )?(right|correct|it)\b`),
        w(String.raw`\bexactly (what i (needed|wanted)|right)\b`),
        w(String.raw`^(yes|yep|yup|exactly)\b`),
        w(String.raw`\b(much better|looks good)\b`),
        w(String.raw`\bthat fixed\b`),
        w(String.raw`\b(that'?s|it'?s|is) working\b`),
        w(String.raw`\bgreen (ci|build|tests)\b`),
        w(String.raw`\b(ship it|merging)\b`),
        w(String.raw`^(\u{1F44D}|\u{2705})`),
        w(String.raw`\b(the )?(error|bug|warning|problem|crash)s? (is |are )?gone\b`),
        w(String.raw`\bmerged\b`),
        w(String.raw`\bmuch faster\b`),
      ],
      de: [
        w(String.raw`\b(funktioniert|klappt|la(e)?uft|geht)( jetzt| wieder)?( einwandfrei| perfekt)?\b(?! (\w+ )?nicht)`),
        w(String.raw`\balles gru(e)?n\b`),
        w(String.raw`\bkeine fehler mehr\b`),
        w(String.raw`\bsieht gut aus\b`),
        w(String.raw`\bgenau (das|so)\b`),
        w(String.raw`^richtig\b`),
        w(String.raw`\bhat es gelo(e)?st\b`),
        w(String.raw`\bdas war'?s\b`),
        w(String.raw`^passt\b`),
        w(String.raw`\bwie geschmiert\b`),
        w(String.raw`\bfehler ist weg\b`),
        w(String.raw`\bgemerged\b`),
        w(String.raw`^ja, genau\b`),
      ],
      es: [
        w(String.raw`\b(ya |eso )?funciona\b`),
        w(String.raw`\btodo en verde\b`),
        w(String.raw`\bya no hay errores\b`),
        w(String.raw`\bse ve bien\b`),
        w(String.raw`\bjusto lo que\b`),
        w(String.raw`^correcto\b`),
        w(String.raw`\blo arreglo\b`),
        w(String.raw`\blos tests pasan\b`),
        w(String.raw`^(listo|eso era)\b`),
        w(String.raw`\berror desaparecio\b`),
        w(String.raw`\bmergee\b`),
        w(String.raw`^si, (eso|ese|esa|justo|exacto)\b`),
      ],
      fr: [
        w(String.raw`\bca (marche|fonctionne)\b(?! (toujours |meme )?(pas|plus))`),
        w(String.raw`\bfonctionne\b(?! (toujours |meme )?(pas|plus))`),
        w(String.raw`\btout est vert\b`),
        w(String.raw`\bplus d'erreurs?\b`),
        w(String.raw`\ba l'air bien\b`),
        w(String.raw`\bexactement\b`),
        w(String.raw`\bc'est correct\b`),
        w(String.raw`\bregle le probleme\b`),
        w(String.raw`\bles tests passent\b`),
        w(String.raw`^c'est bon\b`),
        w(String.raw`\bca tourne\b`),
        w(String.raw`\berreur a disparu\b`),
        w(String.raw`\bmerge\b(?!r)`),
        w(String.raw`^oui, (c'est|exactement)\b`),
      ],
    },
  },
  {
    name: 'praise',
    value: 'good',
    confidence: 0.85,
    means: 'the user praises the answer',
    where: 'opening',
    phrases: {
      en: [
        w(String.raw`\b(perfect|great|awesome|excellent|brilliant|ni+ce|cool|beautiful|lovely|amazing|fantastic|superb|love it|lgtm|sweet|yay)\b`),
        w(String.raw`^good call\b`),
        w(String.raw`\b(spot on|well done|good job|great work|nice work|nice catch)\b`),
      ],
      de: [w(String.raw`\b(perfekt|super|toll|klasse|prima|top|sehr gut|genial|spitze|wunderbar)\b`)],
      es: [w(String.raw`\b(perfecto|genial|excelente|estupendo|muy bien|buen trabajo|fantastico|increible|esta genial)\b`)],
      fr: [w(String.raw`\b(parfait|super|genial|excellent|bravo|tres bien|bien joue|nickel|top|impeccable|magnifique)\b`)],
    },
  },
  {
    name: 'thanks',
    value: 'good',
    confidence: 0.8,
    means: 'the user thanks the agent',
    where: 'anywhere',
    phrases: {
      en: [w(String.raw`\b(thanks|thank you|thx|ty|cheers)\b`)],
      de: [w(String.raw`\b(danke|vielen dank)\b`)],
      es: [w(String.raw`\bgracias\b`)],
      fr: [w(String.raw`\bmerci\b`)],
    },
  },
];

/**
 * Signal rules: what a re-ask, an interrupt, a reverted edit or a contradicted claim says about the answer, without
 * any text to read. A re-ask or an interrupt alone is below the default threshold (a new request can reuse the last
 * one's words; Esc also stops an answer that was fine but long). A file put back exactly as it was before the agent's
 * edit, within half an hour and before the next prompt, is about as plain a "no" as a user gives without words; it
 * errs when a stash or a branch switch restores it, hence 0.85 and not more. A claim that the tests pass against a
 * failing run is right about the answer as often as the run is about the claim: the user may have changed files
 * between the turns, so it sits at the threshold, 0.8.
 */
export const SIGNAL_RULES = {
  reask: { value: 'bad' as const, confidence: 0.7, means: 'the next prompt asked the same thing again' },
  interrupted: { value: 'bad' as const, confidence: 0.7, means: 'the user interrupted the answer' },
  reverted: { value: 'bad' as const, confidence: 0.85, means: "the user put a file the agent edited back as it was before the edit" },
  contradicted: { value: 'bad' as const, confidence: 0.8, means: 'the answer said the tests pass or the build succeeds, and a run of them failed' },
};

/**
 * Lower-cased, accents removed, curly apostrophes straightened, one character for each of the input's UTF-16 code
 * units, so a match's offsets quote the original.
 */
export function normalize(text: string): string {
  let out = '';
  for (const ch of text) {
    let n = ch.normalize('NFD').replace(/\p{M}/gu, '').toLowerCase();
    if (ch === '\u2019' || ch === '\u2018') n = "'";
    out += n.length === ch.length ? n : ch;
  }
  return out;
}

/** A Good phrase preceded by one of these (within a few words) is not praise: "not great", "make sure it works". */
const GOOD_GUARD = /\b(not|no|never|would|could|should|if|whether|sure|check|ensure|verify|until|nicht|kein|keine|wenn|ob|nada|si|pas|ne|n')\W+(\w+\W+){0,2}$/u;

/**
 * A follow-up that opens with a request ("make sure it works on Windows", "vérifie que ça marche") asks for something
 * new: the Good rules do not read it (its "works" is a wish, not a report). Bad rules still do.
 */
const REQUEST_OPENING = new RegExp(
  [
    String.raw`^(please |pls |now |also |then )?(make sure|check|verify|ensure|test|can you|could you|would you|write|add|create|generate|implement|run|try|let'?s)\b`,
    String.raw`^(bitte )?(stell sicher|pruf|prufe|teste|kannst du|konntest du|schreib|schreibe|fug|fuge|erstelle|implementiere)\b`,
    String.raw`^(por favor )?(asegurate|comprueba|verifica|prueba|puedes|podrias|escribe|anade|agrega|crea|implementa)\b`,
    String.raw`^(stp )?(verifie|assure-toi|teste|tu peux|peux-tu|pourrais-tu|ecris|ajoute|cree|implemente)\b`,
  ].join('|'),
  'u',
);

/** The end of the first clause: praise words count only before it. */
function openingEnd(norm: string): number {
  const m = /[.;!?:\n]|,\s/u.exec(norm);
  return m === null ? norm.length : m.index;
}

interface Hit {
  rule: TextRule;
  start: number;
  end: number;
}

/**
 * Where a contrast ("but", "aber", "pero", "mais", "though") starts: Good phrases before it do not count, since what
 * follows is the point ("works for ints but it crashes on floats"). -1 when there is none.
 */
function contrastAt(norm: string): number {
  const m = /\b(but|however|though|aber|allerdings|pero|sin embargo|mais|cependant)\b/u.exec(norm);
  return m === null ? -1 : m.index;
}

/**
 * Praise followed by a statement of what happened now ("great, so now we have two bugs", "oh nice, it deleted the
 * database") is as often sarcasm as not: the praise does not count. An interjection before it ("oh", "na", "que")
 * marks it the same way.
 */
const SARCASTIC_OPENING = /^(oh|na|ach|que|oh la la)\s+\S+|^\S+[,.!]+\s+(so |and )?(now|jetzt|ahora|maintenant)\s+(we|it|the|i|you|there|nothing|haben|ist|es|esta|tenemos|on|il|ca|c'est)\b/u;

function hitsOf(norm: string): Hit[] {
  const hits: Hit[] = [];
  const contrast = contrastAt(norm);
  const sarcastic = SARCASTIC_OPENING.test(norm);
  const opening = openingEnd(norm);
  const request = REQUEST_OPENING.test(norm.replace(/^[\s\p{P}]+/u, ''));
  for (const rule of RULES) {
    if (request && rule.value === 'good') continue;
    for (const list of Object.values(rule.phrases)) {
      for (const re of list) {
        const m = re.exec(norm);
        if (m === null) continue;
        const start = m.index;
        const end = start + m[0].length;
        if (rule.where === 'opening' && start > opening) continue;
        if (rule.value === 'good' && GOOD_GUARD.test(norm.slice(Math.max(0, start - 24), start))) continue;
        if (rule.value === 'good' && contrast >= 0 && start < contrast) continue;
        if (rule.name === 'praise' && sarcastic) continue;
        hits.push({ rule, start, end });
      }
    }
  }
  return hits;
}

/** The words that fired a rule, as the user wrote them (the whole clause when it is short). */
function quoteOf(text: string, h: Hit): string {
  let a = h.start;
  let b = h.end;
  while (a > 0 && !/[.;:!?\n]/u.test(text[a - 1]!) && h.end - a < 60) a--;
  while (b < text.length && !/[.;:!?,\n]/u.test(text[b]!) && b - h.start < 80) b++;
  return text.slice(a, b).trim();
}

/**
 * The label a follow-up's text supports, or null: the most confident Bad rule when any fired (sarcasm and "thanks,
 * but" are Bad), else the most confident Good rule.
 */
export function readText(text: string): Omit<WeakLabel, 'signalId'> | null {
  const hits = hitsOf(normalize(text));
  const bad = hits.filter((h) => h.rule.value === 'bad');
  const pool = bad.length > 0 ? bad : hits;
  if (pool.length === 0) return null;
  const best = pool.reduce((a, b) => (b.rule.confidence > a.rule.confidence || (b.rule.confidence === a.rule.confidence && b.start < a.start) ? b : a));
  return { value: best.rule.value, confidence: best.rule.confidence, rule: best.rule.name, quote: quoteOf(text, best) };
}

/**
 * The weak label of one answer from its signals, or null when none reaches `threshold`. The follow-up's words come
 * first; a revert, a contradiction, an interrupt or a re-ask (in that order, the most confident first) labels the
 * answer only when the words say nothing, and never against them.
 */
export function readSignals(all: readonly Signal[], threshold = DEFAULT_THRESHOLD): WeakLabel | null {
  // A dismissed label's signals stay as evidence and suggest nothing.
  const signals = all.filter((s) => s.dismissedAt === null);
  const followup = signals.find((s) => s.kind === 'followup');
  const fromText = followup === undefined ? null : readText(followup.evidence);
  let label: WeakLabel | null = fromText === null ? null : { ...fromText, signalId: followup!.id };
  if (label === null) {
    const order = [
      ['revert', 'reverted'],
      ['contradiction', 'contradicted'],
      ['interrupt', 'interrupted'],
      ['reask', 'reask'],
    ] as const;
    for (const [kind, rule] of order) {
      const s = signals.find((x) => x.kind === kind);
      if (s === undefined) continue;
      label = { ...pick(SIGNAL_RULES[rule]), rule, quote: s.evidence, signalId: s.id };
      break;
    }
  }
  return label !== null && label.confidence >= threshold ? label : null;
}

function pick(r: { value: WeakValue; confidence: number }): { value: WeakValue; confidence: number } {
  return { value: r.value, confidence: r.confidence };
}

/** The rater of a rating made by confirming a weak label: `implicit:<rule>`, or `implicit-flipped:<rule>`. */
export const implicitRater = (rule: string, flipped: boolean): string => `${flipped ? 'implicit-flipped' : 'implicit'}:${rule}`;

/** The rule and whether it was flipped, when `rater` is implicitRater's; null for any other rater (a click, `/rl`, a script). */
export function parseImplicitRater(rater: string): { rule: string; flipped: boolean } | null {
  const m = /^(implicit|implicit-flipped):(.+)$/u.exec(rater);
  return m === null ? null : { rule: m[2]!, flipped: m[1] === 'implicit-flipped' };
}

/** The sentence the card and the popup show: "Rein read this as Bad because you wrote: 'that's wrong'". */
export function explainLabel(label: WeakLabel): string {
  const as = label.value === 'good' ? 'Good' : 'Bad';
  if (label.rule === 'interrupted') return `Rein read this as ${as} because you interrupted it`;
  if (label.rule === 'reask') return `Rein read this as ${as} because you asked again: '${label.quote}'`;
  // The evidence of these two is already a sentence: "you reverted the agent's edit of src/a.ts within 4 min", "the
  // answer said "All tests pass", but `npm test` then failed: FAIL src/a.test.ts".
  if (label.rule === 'reverted' || label.rule === 'contradicted') return `Rein read this as ${as} because ${label.quote}`;
  return `Rein read this as ${as} because you wrote: '${label.quote}'`;
}
