# A message moved or copied into Junk: learn it as spam (imapsieve_mailbox1, cause COPY).
# `pipe :copy` keeps the user's move as it is: the learner gets a copy of the message.
require ["vnd.dovecot.pipe", "copy", "imapsieve"];

pipe :copy "spamnb-learn" ["spam"];
