// One problem with a hosted capability's input: the field (a JSON pointer) and what is wrong with it.
export interface InputIssue {
  field: string;
  message: string;
}
